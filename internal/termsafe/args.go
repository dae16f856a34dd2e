package termsafe

import (
	"fmt"
	"io"
	"reflect"
)

// escapeArgs escapes each string in args as a [Field]: strings, values of
// a string kind (a named type such as timeline.Source) and errors. Other
// values, fmt.Stringers among them, are left as they are, for the verbs
// that format them; the stream's [Writer] still guards what they print.
func escapeArgs(args []any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = Field(v)
		case error:
			args[i] = Field(v.Error())
		case fmt.Stringer:
		default:
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				args[i] = Field(rv.String())
			}
		}
	}
}

// Fprintf is fmt.Fprintf for a format string the program wrote and values
// it did not: the format's newlines and tabs are layout and stay, a value's
// are escaped, so that one value cannot fake a line of a report or a cell
// of a table (tabwriter).
//
// It escapes args in place and hands them on as they came, so that go vet
// still takes it for a printf wrapper and checks each call's format; a
// caller passing its own slice (f(format, s...)) gets it back escaped.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	escapeArgs(args)
	return fmt.Fprintf(w, format, args...)
}
