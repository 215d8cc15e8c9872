package pgstore

// Channel is the store's NOTIFY channel.
func (s *Store) Channel() string { return s.channel }
