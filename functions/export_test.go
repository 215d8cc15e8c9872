package functions

// ParseResult exposes parseResult, the backend contract, to the tests.
var ParseResult = parseResult

// GroupOf exposes groupOf, the group a started child leads.
var GroupOf = groupOf

// CompactInPlace exposes compactInPlace, json.Compact over its input.
var CompactInPlace = compactInPlace
