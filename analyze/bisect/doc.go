// Package bisect is the model of a bisect session, the search by hand for
// the earliest known-bad instant of an incident, in git bisect's words:
// the window the marks leave (Window), the instant to judge next and the
// steps left, the check that refuses a contradicting mark (Check), and the
// start of a session with its first marks (Start).
//
// faultline bisect and the TUI both use it, so they narrow the same window,
// suggest the same instant and refuse the same marks with the same words.
// It reads and writes the session through the store's bisect-log methods
// only (Sessions); how the CLI prints a session, or replays one from a
// log, is the CLI's.
package bisect
