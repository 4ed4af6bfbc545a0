package discovery

import (
	"fmt"
	"strings"
)

// Mode is how tools/list presents an API: every tool, or the discovery
// tools (plus the pinned ones), or whichever fits the token budget.
type Mode string

// The modes.
const (
	ModeAll       Mode = "all"
	ModeDiscovery Mode = "discovery"
	ModeAuto      Mode = "auto"
)

// DefaultBudget is the default token budget of ModeAuto.
const DefaultBudget = 20000

// ParseMode reads a mode setting ("" means ModeAuto).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAll, ModeDiscovery, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("tools mode %q: want all, discovery or auto", s)
}

// EstimateTokens estimates the tokens of encoded JSON: a quarter of its
// bytes, rounded up.
func EstimateTokens(bytes int) int { return (bytes + 3) / 4 }

// Decision is the outcome of [Decide], with what a log line needs.
type Decision struct {
	Discovery bool
	Mode      Mode
	// Tokens is the estimated size of the full tools/list; Budget the budget
	// it was compared with (ModeAuto only).
	Tokens, Budget int
}

func (d Decision) String() string {
	switch {
	case d.Mode != ModeAuto && d.Discovery:
		return "discovery mode (configured)"
	case d.Mode != ModeAuto:
		return "all tools (configured)"
	case d.Discovery:
		return fmt.Sprintf("discovery mode: the full tool list is about %d tokens, over the budget of %d", d.Tokens, d.Budget)
	}
	return fmt.Sprintf("all tools: the full tool list is about %d tokens, within the budget of %d", d.Tokens, d.Budget)
}

// Decide chooses discovery or all tools. listBytes is the encoded size of
// the full tools/list; budget is in tokens (0 or less means DefaultBudget).
// ModeAuto chooses discovery when listBytes/4 exceeds the budget.
func Decide(mode Mode, listBytes, budget int) Decision {
	if budget <= 0 {
		budget = DefaultBudget
	}
	d := Decision{Mode: mode, Tokens: EstimateTokens(listBytes), Budget: budget}
	switch mode {
	case ModeDiscovery:
		d.Discovery = true
	case ModeAll:
	default:
		d.Mode = ModeAuto
		d.Discovery = d.Tokens > budget
	}
	return d
}
