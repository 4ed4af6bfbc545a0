package gateway

import (
	"strconv"
	"testing"
)

// TestStatusLabel: the label of a status is its decimal form, whether it is
// one of the preformatted ones or not.
func TestStatusLabel(t *testing.T) {
	for _, code := range []int{200, 202, 204, 400, 401, 403, 404, 405, 413, 429, 500, 503, 999} {
		if got := statusLabel(code); got != strconv.Itoa(code) {
			t.Errorf("statusLabel(%d) = %q", code, got)
		}
	}
}
