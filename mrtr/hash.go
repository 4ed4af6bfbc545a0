package mrtr

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpgate/mcpgate/internal/jsonx"
)

// emptyArgumentsDigest is the digest of "{}", which stands for absent, null
// and empty arguments.
var emptyArgumentsDigest = sha256.Sum256([]byte("{}"))

// HashArguments returns the arguments hash sealed in a State: the canonical
// form of raw, hashed with SHA-256 and encoded as unpadded base64url.
// Absent, null and empty-object arguments all hash as {}. Invalid JSON,
// including an object with a duplicate member name or invalid UTF-8, is an
// error.
//
// The canonical form is RFC 8785 (JCS: members sorted by UTF-16 code
// units, minimal string escapes, no whitespace) with one deliberate
// deviation in its number rule: a number is written in jsonx's canonical
// form, its exact decimal value, not rounded to an IEEE 754 double first
// (and integers keep their digits up to 10^100 where JCS switches to an
// exponent at 10^21). JCS would make 9007199254740992 and 9007199254740993
// one number, so a confirmation of one would authorize the other; here
// they differ, while 28, 28.0, 2.8e1 and 280e-1 (one value) hash alike. The
// proxy forwards exactly this form, so two argument objects hash alike
// exactly when they send the same request. For the shortest literal of any
// double below 10^21 in magnitude the form is RFC 8785's.
func HashArguments(raw json.RawMessage) (string, error) {
	sum, err := argumentsDigest(raw)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func argumentsDigest(raw json.RawMessage) ([sha256.Size]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return emptyArgumentsDigest, nil
	}
	c := canonPool.Get().(*canonicalizer)
	defer canonPool.Put(c)
	v, err := c.canonicalize(raw)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("mrtr: arguments: %w", err)
	}
	if string(v) == "null" {
		return emptyArgumentsDigest, nil
	}
	return sha256.Sum256(v), nil
}

// canonicalizer holds the buffers of one canonicalization; pooled.
type canonicalizer struct {
	in  bytes.Reader
	dec jsontext.Decoder
	out bytes.Buffer
	enc jsontext.Encoder
	num []byte
}

var canonPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// canonicalize returns the canonical form of raw (valid until the next
// use of c). Pass one rewrites every number literal in its canonical form
// while jsontext checks the syntax, duplicate names and UTF-8; pass two is
// jsontext's RFC 8785 canonicalization with the numbers left as written.
func (c *canonicalizer) canonicalize(raw []byte) (jsontext.Value, error) {
	c.in.Reset(raw)
	c.dec.Reset(&c.in)
	c.out.Reset()
	c.enc.Reset(&c.out, jsontext.Multiline(false))
	defer func() { // drop the references to raw before c is pooled
		c.in.Reset(nil)
		c.dec.Reset(&c.in)
	}()
	for {
		var err error
		if c.dec.PeekKind() == '0' {
			var lit jsontext.Value
			if lit, err = c.dec.ReadValue(); err == nil {
				c.num, err = jsonx.AppendCanonicalNumber(c.num[:0], lit)
			}
			if err == nil {
				err = c.enc.WriteValue(c.num)
			}
		} else {
			var tok jsontext.Token
			if tok, err = c.dec.ReadToken(); err == nil {
				err = c.enc.WriteToken(tok)
			}
		}
		if err != nil {
			return nil, err
		}
		if c.dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := c.dec.ReadToken(); err != io.EOF {
		return nil, errors.New("invalid data after the top-level value")
	}
	v := jsontext.Value(bytes.TrimSuffix(c.out.Bytes(), []byte{'\n'}))
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false), jsontext.CanonicalizeRawFloats(false)); err != nil {
		return nil, err
	}
	return v, nil
}
