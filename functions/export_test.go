package functions

// ParseResult exposes parseResult, the backend contract, to the tests.
var ParseResult = parseResult
