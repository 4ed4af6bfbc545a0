package connect

import "testing"

func TestSameCode(t *testing.T) {
	tests := []struct {
		typed string
		ok    bool
	}{
		{"ABCD-EFGH", true}, {"abcdefgh", true}, {" abcd efgh ", true}, {"AB-CD-EF-GH", true},
		{"ABCD-EFGX", false}, {"ABCDEFG", false}, {"ABCDEFGHI", false}, {"", false},
	}
	for _, tt := range tests {
		if got := sameCode(tt.typed, "ABCDEFGH"); got != tt.ok {
			t.Errorf("sameCode(%q) = %v, want %v", tt.typed, got, tt.ok)
		}
	}
}
