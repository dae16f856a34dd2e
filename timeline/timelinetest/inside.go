package timelinetest

import "unsafe"

// Inside reports whether the bytes of s lie inside those of buf: whether
// keeping s keeps buf (an empty s keeps nothing).
func Inside(s, buf string) bool {
	if len(s) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(buf)))
	return p >= lo && p < lo+uintptr(len(buf))
}
