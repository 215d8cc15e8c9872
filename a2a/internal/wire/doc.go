// Package wire holds what the 0.3 and 1.0 codecs (packages a2a/v03 and
// a2a/v1) share: the Checker that reads request params field by field and
// names every problem by its JSON pointer, and the writers of the shapes
// both versions have, parameterised by the version's encoders.
package wire
