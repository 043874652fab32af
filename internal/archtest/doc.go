// Package archtest holds no code: its tests hold the house rules that the
// compiler does not, read from the module's own sources with go/parser.
//
//   - Only package store imports gorm, so the database stays behind the
//     store's methods; only httpapi and web import gin, so *gin.Context
//     never travels below a handler. Test files count too.
//   - The store's raw-SQL escape hatches (RawExec, RawScan, RawInsert)
//     are called only from tests and from the store's own tree.
//   - No function under internal/ is 100 lines or longer (see funclen_test.go).
package archtest
