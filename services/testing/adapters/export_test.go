package adapters

// SubjectMatches is subjectMatches for the external tests.
var SubjectMatches = subjectMatches
