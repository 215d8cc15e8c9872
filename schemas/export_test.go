package schemas

// Shaped reports whether s is checked as a shape first, and if so
// whether the shape accepts instance.
func (s *Schema) Shaped(instance []byte) (shaped, accepted bool) {
	return s.shape != nil, s.shape != nil && s.shape.accepts(instance)
}

// Problems is Validate by the compiled schema alone.
func (s *Schema) Problems(instance []byte) []Problem { return s.problems(instance) }
