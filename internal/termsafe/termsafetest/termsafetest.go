// Package termsafetest holds the evidence of issue 15 for tests: an audit
// log whose clients put terminal escapes where the API lets any client put
// a string. The CLI's and the TUI's tests ingest it and check that what
// they print holds none of the escapes raw (termsafe.Unsafe).
package termsafetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The payloads, one per field a client chooses.
const (
	// UserAgent sets the window title (OSC 0, ended by BEL).
	UserAgent = "\x1b]0;PWNED\x07x/1"
	// Name erases the line above and the current one (CSI), so the output
	// around it can be forged, then reverses what follows (bidi override).
	Name = "cfg\x1b[1A\x1b[2K\u202eevil"
	// Message writes the clipboard (OSC 52), clears the screen with a C1
	// CSI and returns the carriage.
	Message = "\x1b]52;c;UFdORUQ=\x07 denied\u009b2J\r"
	// Key is a ConfigMap key: history and the diffs show keys.
	Key = "LR\x1b]0;KEY\x07"
)

// Escaped are the payloads as termsafe.Field shows them.
const (
	UserAgentEscaped = `\x1b]0;PWNED\x07x/1`
	NameEscaped      = `cfg\x1b[1A\x1b[2K\u202eevil`
	MessageEscaped   = `\x1b]52;c;UFdORUQ=\x07 denied\u009b2J\r`
)

// Start is when the log begins; the payload client's server errors begin
// five minutes later.
var Start = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// AuditLog is five quiet minutes of reads, a ConfigMap created and changed
// by the payload client, then five minutes of server errors to it: its user
// agent, the ConfigMap's name, a key and a label, and the errors' message
// carry the payloads.
func AuditLog() []byte {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	at := func(d time.Duration) string { return q(Start.Add(d).Format(time.RFC3339Nano)) }
	var b strings.Builder
	line := func(id, verb, ua, name string, code int, msg string, d time.Duration, obj string) {
		status := fmt.Sprintf(`{"code":%d}`, code)
		if msg != "" {
			status = fmt.Sprintf(`{"code":%d,"message":%s}`, code, q(msg))
		}
		level, resp := "Metadata", ""
		if obj != "" {
			level, resp = "RequestResponse", `,"responseObject":`+obj
		}
		fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":%q,"auditID":%q,"stage":"ResponseComplete","requestURI":%s,"verb":%q,`+
			`"user":{"username":"system:serviceaccount:ml:trainer"},"sourceIPs":["10.0.0.1"],"userAgent":%s,`+
			`"objectRef":{"resource":"configmaps","namespace":"ml","name":%s,"apiVersion":"v1"},"responseStatus":%s,`+
			`"requestReceivedTimestamp":%s,"stageTimestamp":%s%s}`+"\n",
			level, id, q("/api/v1/namespaces/ml/configmaps/"+name), verb, q(ua), q(name), status, at(d), at(d+time.Millisecond), resp)
	}
	cm := func(rv, lr string) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%s,"namespace":"ml","uid":"cm-1","resourceVersion":%q,`+
			`"labels":{"app":%s}},"data":{%s:%q}}`, q(Name), rv, q(UserAgent), q(Key), lr)
	}
	line("cm-1", "create", UserAgent, Name, 201, "", 30*time.Second, cm("10", "0.1"))
	for i := range 30 {
		line(fmt.Sprintf("good-%d", i), "get", "trainer/2.3 (linux/amd64)", "trainer-env", 200, "", time.Duration(i)*10*time.Second, "")
	}
	line("cm-2", "update", UserAgent, Name, 200, "", 4*time.Minute+58*time.Second, cm("11", "10"))
	for i := range 60 {
		line(fmt.Sprintf("bad-%d", i), "get", UserAgent, Name, 500, Message, 5*time.Minute+time.Duration(i)*5*time.Second, "")
	}
	return []byte(b.String())
}

// Expected is an incident's expected.json (for eval) whose family carries
// the user agent's payload and a bidi override.
func Expected() []byte {
	fam, _ := json.Marshal("fam" + UserAgent + "\u202e")
	return fmt.Appendf(nil, `{"schemaVersion":1,"incident":"payload","family":%s,"seed":1,"nodes":1,`+
		`"boundary":{"lastGood":"2026-05-01T10:04:59Z","firstBad":"2026-05-01T10:05:00Z","tolerance":"3s"}}`, fam)
}
