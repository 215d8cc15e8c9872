package functions

// ParseResult exposes parseResult, the backend contract, to the tests.
var ParseResult = parseResult

// GroupOf exposes groupOf, the group a started child leads.
var GroupOf = groupOf
