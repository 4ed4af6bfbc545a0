package jsonx

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// This file owns the one canonical form of a JSON number, shared by the
// arguments hash sealed in an MRTR requestState and by the proxy, which
// forwards exactly that form upstream: what the user confirmed is what is
// sent.
//
// The canonical form is the layout of RFC 8785 §3.2.2.3 (ECMAScript's
// Number::toString) applied to the literal's exact decimal value instead
// of to the nearest IEEE 754 double, with integers written in digits up to
// 10^100 (ECMAScript switches to an exponent at 10^21): no leading zeros,
// no trailing fractional zeros, "-0" written 0, plain digits when the
// magnitude is below 10^100 and at least 10^-6, otherwise d.ddde±x. So
// 28.0, 2.8e1 and 280e-1 are all 28, 1.50 is 1.5, 1e21 is 1 and 21 zeros,
// 1e-7 is 1e-7, 1e100 is 1e+100, and 9007199254740993 stays
// 9007199254740993 (a double would make it ...992). For every double below
// 10^21 in magnitude (its shortest literal), this is RFC 8785's form.
//
// Everything here costs time linear in the literal's length and never does
// big-number arithmetic: a literal with a million digits is measured, not
// converted.

// Limits of [Number.Check]: far beyond int64 (19 digits), uint64 (20),
// decimal128 (34), uint256 (78) and float64 (exponents -324 to 308), so no
// real API is refused, and small enough that no later check (math/big in
// jsonschema, the upstream's parser) spends more than microseconds on a
// number.
const (
	MaxNumberDigits   = 100 // significant digits
	MaxNumberExponent = 400 // |x| in the scientific form d.ddd×10^x
)

// ErrNumberSyntax reports a literal that is not a JSON number.
var ErrNumberSyntax = errors.New("not a JSON number")

// Number is a JSON number literal read as its exact decimal value: a sign,
// the significant digits s (k of them, without leading or trailing zeros)
// and the exponent n such that the value is s × 10^(n−k). It aliases the
// literal it was parsed from. The zero Number is 0.
type Number struct {
	lit    []byte
	neg    bool
	intLen int   // digits before the '.' (or before the exponent)
	fracAt int   // index in lit of the first fraction digit
	first  int   // logical index (see digit) of the first significant digit
	k      int   // number of significant digits; 0 for zero
	n      int64 // the value lies in [10^(n−1), 10^n)
}

// plainDigits is the largest n written without an exponent.
const plainDigits = 100

// maxExp saturates exponents: beyond it a value is out of every limit
// whatever its digits (a literal is far shorter than 2^50 bytes).
const maxExp = 1 << 50

// ParseNumber reads a JSON number literal (RFC 8259 §6 grammar, nothing
// around it). It allocates nothing and is linear in len(lit).
func ParseNumber(lit []byte) (Number, error) {
	x := Number{lit: lit}
	i := 0
	if i < len(lit) && lit[i] == '-' {
		x.neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case i < len(lit) && '1' <= lit[i] && lit[i] <= '9':
		i = skipDigits(lit, i)
	default:
		return Number{}, ErrNumberSyntax
	}
	x.intLen = i - intStart
	x.fracAt = i
	fracLen := 0
	if i < len(lit) && lit[i] == '.' {
		x.fracAt = i + 1
		i = skipDigits(lit, i+1)
		if fracLen = i - x.fracAt; fracLen == 0 {
			return Number{}, ErrNumberSyntax
		}
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		expNeg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			expNeg = lit[i] == '-'
			i++
		}
		start := i
		for ; i < len(lit) && '0' <= lit[i] && lit[i] <= '9'; i++ {
			if exp < maxExp {
				exp = exp*10 + int64(lit[i]-'0')
			}
		}
		if i == start {
			return Number{}, ErrNumberSyntax
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(lit) {
		return Number{}, ErrNumberSyntax
	}
	// significant digits: the first and last non-zero digit of int ++ frac
	total := x.intLen + fracLen
	first, last := -1, -1
	for j := 0; j < total; j++ {
		if x.digit(intStart, j) != '0' {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		return Number{lit: lit}, nil // zero, whatever its spelling
	}
	x.first = first
	x.k = last - first + 1
	x.n = exp + int64(x.intLen) - int64(first)
	return x, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// digit returns digit j of int ++ frac (the literal's digits without the
// point); intStart is where the integer part starts in lit.
func (x *Number) digit(intStart, j int) byte {
	if j < x.intLen {
		return x.lit[intStart+j]
	}
	return x.lit[x.fracAt+j-x.intLen]
}

// sig returns significant digit i (0 ≤ i < k).
func (x *Number) sig(i int) byte {
	intStart := 0
	if x.neg {
		intStart = 1
	}
	return x.digit(intStart, x.first+i)
}

// IsZero reports whether the value is zero (0, -0, 0.000e5, ...).
func (x Number) IsZero() bool { return x.k == 0 }

// IsInteger reports whether the value has no fractional part (28.0 and
// 2.8e1 are integers).
func (x Number) IsInteger() bool { return x.k == 0 || x.n >= int64(x.k) }

// Digits is the number of significant digits (0 for zero).
func (x Number) Digits() int { return x.k }

// Exponent is x in the scientific form d.ddd×10^x (0 for zero).
func (x Number) Exponent() int64 {
	if x.k == 0 {
		return 0
	}
	return x.n - 1
}

// Check refuses a number beyond the limits ([MaxNumberDigits],
// [MaxNumberExponent]) with an error that says which and why.
func (x Number) Check() error {
	if x.k > MaxNumberDigits {
		return fmt.Errorf("a number with %d significant digits is refused (at most %d)", x.k, MaxNumberDigits)
	}
	if e := x.Exponent(); e > MaxNumberExponent || e < -MaxNumberExponent {
		return fmt.Errorf("a number of magnitude 1e%d is refused (the limit is 1e±%d)", e, MaxNumberExponent)
	}
	return nil
}

// Int64 returns the value when it is an integer that fits an int64.
func (x Number) Int64() (int64, bool) {
	u, ok := x.magnitude()
	switch {
	case !ok:
	case !x.neg && u <= math.MaxInt64:
		return int64(u), true
	case x.neg && u <= 1<<63:
		return int64(-u), true // -(1<<63) wraps to itself
	}
	return 0, false
}

// Uint64 returns the value when it is an integer that fits a uint64.
func (x Number) Uint64() (uint64, bool) {
	u, ok := x.magnitude()
	if !ok || x.neg && u != 0 {
		return 0, false
	}
	return u, true
}

// magnitude returns |value| when it is an integer below 2^64.
func (x Number) magnitude() (uint64, bool) {
	if !x.IsInteger() || x.n > 20 {
		return 0, false
	}
	var u uint64
	for i := 0; i < int(x.n); i++ {
		d := uint64(0)
		if i < x.k {
			d = uint64(x.sig(i) - '0')
		}
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}

// Append appends the canonical form (see the file comment) to dst.
func (x Number) Append(dst []byte) []byte {
	if x.k == 0 {
		return append(dst, '0')
	}
	if x.neg {
		dst = append(dst, '-')
	}
	k, n := int64(x.k), x.n
	switch {
	case k <= n && n <= plainDigits: // digits, then n−k zeros
		dst = x.appendSig(dst, 0, x.k)
		for i := k; i < n; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= plainDigits: // point inside the digits
		dst = x.appendSig(dst, 0, int(n))
		dst = append(dst, '.')
		dst = x.appendSig(dst, int(n), x.k)
	case -6 < n && n <= 0: // 0.000ddd
		dst = append(dst, '0', '.')
		for i := n; i < 0; i++ {
			dst = append(dst, '0')
		}
		dst = x.appendSig(dst, 0, x.k)
	default: // d.ddde±x
		dst = x.appendSig(dst, 0, 1)
		if x.k > 1 {
			dst = append(dst, '.')
			dst = x.appendSig(dst, 1, x.k)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, n-1, 10)
	}
	return dst
}

// appendSig appends significant digits [from, to).
func (x *Number) appendSig(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, x.sig(i))
	}
	return dst
}

// IsCanonical reports whether the literal is already in canonical form, so
// that a caller can keep it without building a new one.
func (x Number) IsCanonical() bool {
	if x.k == 0 {
		return len(x.lit) == 1 && x.lit[0] == '0'
	}
	// the common case, an integer spelled with plain digits: canonical
	// unless it has leading zeros (only "0" can) or is too long
	if x.fracAt == len(x.lit) {
		return x.n <= plainDigits
	}
	var buf [64]byte
	c := x.Append(buf[:0])
	return string(c) == string(x.lit)
}

// AppendCanonicalNumber appends the canonical form of the JSON number
// literal lit to dst; it fails only on a literal that is not a number. It
// does not check the limits (see [Number.Check]): the hash of an argument
// the proxy will refuse still has to be computed.
func AppendCanonicalNumber(dst, lit []byte) ([]byte, error) {
	x, err := ParseNumber(lit)
	if err != nil {
		return dst, err
	}
	return x.Append(dst), nil
}
