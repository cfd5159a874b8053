// Command funclint fails when a function is too long or too branchy: it
// prints every function declaration of the named packages' non-test,
// non-generated Go files whose body spans more than -max-lines lines (from
// the line of the opening brace to the line of the closing one) or whose
// cyclomatic complexity exceeds -max-cyclo, as file:line, name, lines and
// complexity, and exits 1 when it printed any. `make lint` runs it.
//
// Complexity is counted as gocyclo (github.com/fzipp/gocyclo) counts it:
// 1, plus one for each if, for, range, non-default case clause of a switch
// or type switch, non-default comm clause of a select, and each && and ||,
// function literals in the body included. Test files (_test.go) are exempt
// — test functions and their tables — and so are generated files (a
// "// Code generated ... DO NOT EDIT." line before the package clause).
package main
