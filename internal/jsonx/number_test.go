package jsonx

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestCanonicalNumber(t *testing.T) {
	tests := []struct{ lit, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"0.000", "0"},
		{"-0e10", "0"},
		{"0E-5", "0"},
		{"28", "28"},
		{"28.0", "28"},
		{"2.8e1", "28"},
		{"2.8E+1", "28"},
		{"280e-1", "28"},
		{"0.28e2", "28"},
		{"5e0", "5"},
		{"-5", "-5"},
		{"-5.000", "-5"},
		{"1.50", "1.5"},
		{"-0.5", "-0.5"},
		{"100", "100"},
		{"1e2", "100"},
		{"1.0e2", "100"},
		{"9007199254740992", "9007199254740992"},
		{"9007199254740993", "9007199254740993"}, // a double would say ...992
		{"1234567890123456789", "1234567890123456789"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"18446744073709551616", "18446744073709551616"},
		{"100000000000000000000", "100000000000000000000"}, // 1e20: plain
		{"1e21", "1000000000000000000000"},
		{"123456789012345678901234", "123456789012345678901234"},
		{"1.5e99", "15" + strings.Repeat("0", 98)},
		{strings.Repeat("9", 100), strings.Repeat("9", 100)},
		{"1e100", "1e+100"},
		{"-1.25e100", "-1.25e+100"},
		{"123.456e97", "123456" + strings.Repeat("0", 94)},
		{"1.23456e97", "12345600000" + strings.Repeat("0", 87)},
		{"0.000001", "0.000001"},
		{"1e-6", "0.000001"},
		{"1e-7", "1e-7"},
		{"0.00000012", "1.2e-7"},
		{"-1.25e-10", "-1.25e-10"},
		{"1e400", "1e+400"},
		{"1e-400", "1e-400"},
		{"1e1000000", "1e+1000000"},
		{"12.3456", "12.3456"},
		{"0.1", "0.1"},
		{"000.1e1", ""}, // syntax error: leading zeros
	}
	for _, tt := range tests {
		got, err := AppendCanonicalNumber(nil, []byte(tt.lit))
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: canonical %s, want a syntax error", tt.lit, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: canonical %s (%v), want %s", tt.lit, got, err, tt.want)
		}
		x, _ := ParseNumber([]byte(tt.lit))
		if canon := tt.lit == tt.want; x.IsCanonical() != canon {
			t.Errorf("%s: IsCanonical %v, want %v", tt.lit, x.IsCanonical(), canon)
		}
	}
}

func TestParseNumberSyntax(t *testing.T) {
	for _, bad := range []string{"", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1.e5", "0x10", "1_000", "NaN", "Infinity", "1 ", " 1", "1e5.0", "--1", "1.2.3"} {
		if x, err := ParseNumber([]byte(bad)); err == nil {
			t.Errorf("ParseNumber(%q) = %+v, want a syntax error", bad, x)
		}
	}
}

// TestCanonicalMatchesRFC8785 checks the claim of the file comment: for the
// shortest literal of a double below 1e21, the canonical form is RFC 8785's
// (above, integers keep their digits where RFC 8785 uses an exponent).
func TestCanonicalMatchesRFC8785(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1e21 {
			return
		}
		for _, format := range []byte{'g', 'e', 'f'} {
			lit := strconv.FormatFloat(f, format, -1, 64)
			jcs := jsontext.Value(lit)
			if err := jcs.Canonicalize(); err != nil {
				t.Fatalf("%s: %v", lit, err)
			}
			got, err := AppendCanonicalNumber(nil, []byte(lit))
			if err != nil || string(got) != string(jcs) {
				t.Fatalf("%s: canonical %s (%v), RFC 8785 says %s", lit, got, err, jcs)
			}
		}
	}
	for _, f := range []float64{0, 1, -1, 0.1, 1e21 - 65536, 1e20, 1e-6, 1e-7, 123e-9, math.SmallestNonzeroFloat64, 1 << 53, 5e-324, 4.35, 333333333.33333329} {
		check(f)
		check(-f)
	}
	for range 20000 {
		check(math.Float64frombits(r.Uint64()))
		check(math.Float64frombits(r.Uint64() >> 2)) // smaller exponents, more of them below 1e21
		check(float64(r.Int64N(1<<62)) / float64(r.Int64N(1<<20)+1))
	}
}

// TestCanonicalIsExact compares the canonical form with math/big on
// random literals: it denotes the same value, and parsing it again gives
// the same form.
func TestCanonicalIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 20000 {
		lit := strconv.Itoa(r.IntN(1000000))
		if r.IntN(4) == 0 {
			lit = strconv.FormatUint(r.Uint64(), 10) // around the int64 and uint64 limits
		}
		if r.IntN(2) == 0 {
			lit = "-" + lit
		}
		if r.IntN(2) == 0 {
			lit += "." + digits(1+r.IntN(30))
		}
		if r.IntN(2) == 0 {
			lit += "e" + strconv.Itoa(r.IntN(80)-40)
		}
		got, err := AppendCanonicalNumber(nil, []byte(lit))
		if err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		want, _ := new(big.Rat).SetString(lit)
		have, ok := new(big.Rat).SetString(string(got))
		if !ok || have.Cmp(want) != 0 {
			t.Fatalf("%s: canonical %s has another value", lit, got)
		}
		again, _ := AppendCanonicalNumber(nil, got)
		if string(again) != string(got) {
			t.Fatalf("%s: canonical %s is not stable (%s)", lit, got, again)
		}
		x, _ := ParseNumber(got)
		if !x.IsCanonical() {
			t.Fatalf("%s: IsCanonical(%s) is false", lit, got)
		}
		if i, ok := x.Int64(); ok != (want.IsInt() && want.Num().IsInt64()) || ok && i != want.Num().Int64() {
			t.Fatalf("%s: Int64 = %d, %v", lit, i, ok)
		}
		if u, ok := x.Uint64(); ok != (want.IsInt() && want.Num().IsUint64()) || ok && u != want.Num().Uint64() {
			t.Fatalf("%s: Uint64 = %d, %v", lit, u, ok)
		}
	}
}

func TestNumberCheck(t *testing.T) {
	tests := []struct {
		lit string
		ok  bool
	}{
		{"0", true},
		{"1e400", true},
		{"-1e400", true},
		{"1e-400", true},
		{"9.99e400", true},
		{"1e401", false},
		{"10e400", false},
		{"1e-401", false},
		{"0.1e-400", false},
		{"0e99999999999999999999999", true}, // zero, however written
		{"1e99999999999999999999999", false},
		{"1" + strings.Repeat("0", 400), true},
		{"1" + strings.Repeat("0", 401), false},
		{strings.Repeat("7", 100), true},
		{strings.Repeat("7", 101), false},
		{"1." + strings.Repeat("0", 100000) + "1", false},
		{"1." + strings.Repeat("0", 100000), true}, // trailing zeros are not significant
		{strings.Repeat("1", 50) + "." + strings.Repeat("2", 50), true},
		{"1" + strings.Repeat("0", 999999) + "e-999990", true}, // = 1e9
	}
	for _, tt := range tests {
		x, err := ParseNumber([]byte(tt.lit))
		if err != nil {
			t.Fatalf("%.40s: %v", tt.lit, err)
		}
		if err := x.Check(); (err == nil) != tt.ok {
			t.Errorf("%.40s… (%d digits, exponent %d): Check() = %v, want ok=%v", tt.lit, x.Digits(), x.Exponent(), err, tt.ok)
		}
	}
}

func TestNumberIntegers(t *testing.T) {
	tests := []struct {
		lit string
		i   int64
		iOK bool
		u   uint64
		uOK bool
	}{
		{"0", 0, true, 0, true},
		{"-0.0", 0, true, 0, true},
		{"28.0", 28, true, 28, true},
		{"2.8e1", 28, true, 28, true},
		{"-1", -1, true, 0, false},
		{"9223372036854775807", math.MaxInt64, true, math.MaxInt64, true},
		{"9223372036854775808", 0, false, 1 << 63, true},
		{"-9223372036854775808", math.MinInt64, true, 0, false},
		{"-9223372036854775809", 0, false, 0, false},
		{"18446744073709551615", 0, false, math.MaxUint64, true},
		{"1.8446744073709551615e19", 0, false, math.MaxUint64, true},
		{"18446744073709551616", 0, false, 0, false},
		{"99999999999999999999", 0, false, 0, false},
		{"100000000000000000000", 0, false, 0, false},
		{"1e19", 0, false, 1e19, true},
		{"1e18", 1e18, true, 1e18, true},
		{"1.5", 0, false, 0, false},
		{"1e-1", 0, false, 0, false},
	}
	for _, tt := range tests {
		x, err := ParseNumber([]byte(tt.lit))
		if err != nil {
			t.Fatal(err)
		}
		if i, ok := x.Int64(); i != tt.i || ok != tt.iOK {
			t.Errorf("%s: Int64 = %d, %v; want %d, %v", tt.lit, i, ok, tt.i, tt.iOK)
		}
		if u, ok := x.Uint64(); u != tt.u || ok != tt.uOK {
			t.Errorf("%s: Uint64 = %d, %v; want %d, %v", tt.lit, u, ok, tt.u, tt.uOK)
		}
	}
}

func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "28.0", "1e21", "1.5e-7", "9007199254740993", "-12.500e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		x, err := ParseNumber([]byte(lit))
		if err != nil {
			if jsontext.Value(lit).IsValid() && !strings.ContainsAny(lit, "\"{[tfn") && strings.TrimSpace(lit) == lit {
				t.Fatalf("%q is valid JSON but ParseNumber says %v", lit, err)
			}
			return
		}
		got := x.Append(nil)
		if want, ok := new(big.Rat).SetString(lit); ok && len(lit) < 200 && x.Check() == nil {
			// (math/big refuses exponents it cannot hold, even of a zero)
			have, ok := new(big.Rat).SetString(string(got))
			if !ok || want.Cmp(have) != 0 {
				t.Fatalf("%s: canonical %s has another value", lit, got)
			}
		}
		if again, _ := AppendCanonicalNumber(nil, got); string(again) != string(got) {
			t.Fatalf("%s: canonical %s is not stable (%s)", lit, got, again)
		}
	})
}

func BenchmarkParseNumber(b *testing.B) {
	for _, lit := range []string{"1", "28.0", "-1.25e-10", "1234567890123456789"} {
		b.Run(lit, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				x, err := ParseNumber([]byte(lit))
				if err != nil || x.Check() != nil {
					b.Fatal(err)
				}
				buf = x.Append(buf[:0])
			}
		})
	}
}
