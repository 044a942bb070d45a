package storage

import "fmt"

// Put stores a small value under name in the generic key space, for other
// actors' durable bits (the node's id allocator, the cluster id). With sync
// it is fsynced before the call returns.
func (s *Store) Put(name string, value []byte, sync bool) error {
	if len(name) > maxKVNameLen {
		return fmt.Errorf("storage: put: name of %d bytes", len(name))
	}
	if err := s.set(kvKey(name), value, sync); err != nil {
		return fmt.Errorf("storage: put %q: %w", name, err)
	}
	return nil
}

// Get returns a copy of the value stored under name.
func (s *Store) Get(name string) ([]byte, bool, error) {
	v, ok, err := s.get(kvKey(name))
	if err != nil {
		return nil, false, fmt.Errorf("storage: get %q: %w", name, err)
	}
	return v, ok, nil
}

// Delete removes name from the generic key space (not synced); a missing
// name is not an error.
func (s *Store) Delete(name string) error {
	if err := s.del(kvKey(name)); err != nil {
		return fmt.Errorf("storage: delete %q: %w", name, err)
	}
	return nil
}
