package agent

// TitleFrom exposes titleFrom to the tests.
var TitleFrom = titleFrom
