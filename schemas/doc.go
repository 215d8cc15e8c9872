// Package schemas compiles the JSON Schemas of the function catalogue and
// validates inputs and outputs against them, reporting each problem with
// the JSON pointer of the value at fault.
package schemas
