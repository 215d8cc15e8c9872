// Package functions is the operator's function catalogue and its backends.
//
// A catalogue file (YAML, or JSON, which YAML reads too) lists functions,
// each with its metadata, its input and output JSON Schemas, a timeout and
// exactly one backend: http, exec or builtin. Load checks the whole file and
// reports every problem at once, each naming its position and function id.
// A loaded Catalog is immutable; a reload builds a new one.
package functions
