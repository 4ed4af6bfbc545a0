package tasks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sealer encrypts and authenticates small records: what a task keeps
// secret for its worker. Open must fail for a record that was altered or
// that is opened with other additional data than it was sealed with. An
// AEAD secret box over the deployment's key ring (the same keys on every
// replica) implements it, so any replica opens what another sealed.
type Sealer interface {
	Seal(plain, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// Secrets keeps a secret with each task, such as the credential its worker
// calls an API with on the creator's behalf, so that whichever runner runs
// the task (another replica after a crash, the next process after a
// restart) acts as the creator. The secret is sealed before it reaches the
// store, bound to the task's owner and tool (a record copied to another
// owner's task does not open), handed to the handler by [Exec.Secret] and
// deleted from the store when the task ends.
type Secrets struct {
	Sealer Sealer
	// Capture returns the secret to keep for a task being created, from
	// the creating request's context; nil keeps none.
	Capture func(ctx context.Context, nt NewTask) ([]byte, error)
}

// seal fills nt.Secret; a nil s keeps nothing.
func (s *Secrets) seal(ctx context.Context, nt *NewTask) error {
	if s == nil || s.Capture == nil {
		return nil
	}
	if s.Sealer == nil {
		return errors.New("tasks: Secrets needs a Sealer")
	}
	plain, err := s.Capture(ctx, *nt)
	if err != nil || plain == nil {
		return err
	}
	if nt.Secret, err = s.Sealer.Seal(plain, secretAAD(nt.Owner, nt.ToolName)); err != nil {
		return fmt.Errorf("seal task secret: %w", err)
	}
	return nil
}

// open returns t's secret in the clear (nil when it has none).
func (s *Secrets) open(t *Task) ([]byte, error) {
	if len(t.Secret) == 0 {
		return nil, nil
	}
	if s == nil || s.Sealer == nil {
		return nil, errors.New("tasks: the task has a sealed secret but the runner has no Sealer")
	}
	plain, err := s.Sealer.Open(t.Secret, secretAAD(t.Owner, t.ToolName))
	if err != nil {
		return nil, fmt.Errorf("open task secret: %w", err)
	}
	return plain, nil
}

// secretAAD binds a sealed task secret to its purpose, owner and tool;
// each part is length-prefixed, so no two tuples share an encoding.
func secretAAD(p Principal, tool string) []byte {
	b := []byte("mcpgate task secret v1")
	for _, part := range []string{p.Subject, p.Tenant, tool} {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	return b
}
