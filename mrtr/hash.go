package mrtr

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// emptyArgumentsDigest is the digest of "{}", which stands for absent, null
// and empty arguments.
var emptyArgumentsDigest = sha256.Sum256([]byte("{}"))

// HashArguments returns the arguments hash sealed in a State: the RFC 8785
// (JCS) canonical form of raw, hashed with SHA-256 and encoded as unpadded
// base64url. Absent, null and empty-object arguments all hash as {}. Invalid
// JSON, including an object with a duplicate member name, is an error.
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
	buf := canonPool.Get().(*[]byte)
	defer canonPool.Put(buf)
	v := jsontext.Value(append((*buf)[:0], raw...)) // Canonicalize works in place
	err := v.Canonicalize()
	*buf = v[:0]
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("mrtr: arguments: %w", err)
	}
	if string(v) == "null" {
		return emptyArgumentsDigest, nil
	}
	return sha256.Sum256(v), nil
}

var canonPool = sync.Pool{New: func() any { return new([]byte) }}
