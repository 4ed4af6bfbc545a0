package auth

import (
	"testing"
)

// BenchmarkValidate measures validating a token whose key is already
// cached (no network): parse, key lookup, signature, claims, principal.
func BenchmarkValidate(b *testing.B) {
	is := newIssuer(b, "", allKeys()...)
	v := newTestValidator(b, is, nil)
	for _, k := range allKeys() {
		raw := sign(b, k, is.claims(testResource))
		if _, err := v.Validate(b.Context(), raw); err != nil {
			b.Fatal(err)
		}
		b.Run(k.alg, func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Validate(ctx, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
