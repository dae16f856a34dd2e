package clickhouse

import "testing"

// TestSplitAuditID: only the canonical form goes in the UUID column (it
// reads back as the same text); every other ID is kept as it is.
func TestSplitAuditID(t *testing.T) {
	for _, tc := range []struct {
		id, uuid, rest string
	}{
		{"555b803e-9254-4abf-a126-59f1716e0c5d", "555b803e-9254-4abf-a126-59f1716e0c5d", ""},
		{"555B803E-9254-4ABF-A126-59F1716E0C5D", noUUID, "555B803E-9254-4ABF-A126-59F1716E0C5D"},
		{noUUID, noUUID, noUUID},
		{"", noUUID, ""},
		{"555b803e92544abfa12659f1716e0c5d", noUUID, "555b803e92544abfa12659f1716e0c5d"},
		{"{555b803e-9254-4abf-a126-59f1716e0c5}", noUUID, "{555b803e-9254-4abf-a126-59f1716e0c5}"},
		{"555b803e-9254-4abf-a126-59f1716e0c5g", noUUID, "555b803e-9254-4abf-a126-59f1716e0c5g"},
		{"555b803e+9254-4abf-a126-59f1716e0c5d", noUUID, "555b803e+9254-4abf-a126-59f1716e0c5d"},
		{"req-1", noUUID, "req-1"},
	} {
		uuid, rest := splitAuditID(tc.id)
		if uuid != tc.uuid || rest != tc.rest {
			t.Errorf("splitAuditID(%q) = %q, %q; want %q, %q", tc.id, uuid, rest, tc.uuid, tc.rest)
		}
	}
}

func FuzzSplitAuditID(f *testing.F) {
	for _, s := range []string{"555b803e-9254-4abf-a126-59f1716e0c5d", noUUID, "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		uuid, rest := splitAuditID(id)
		got := rest
		if uuid != noUUID {
			got = uuid
			if rest != "" {
				t.Fatalf("splitAuditID(%q) = %q, %q: both columns set", id, uuid, rest)
			}
		}
		if got != id {
			t.Fatalf("splitAuditID(%q) = %q, %q: reads back %q", id, uuid, rest, got)
		}
	})
}
