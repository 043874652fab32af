// Package compare decides whether a learner's cell outputs match the
// reference outputs of the answer notebook, following the comparison keys of
// metadata.grader (docs/grader-metadata.md).
//
// The work happens in three steps, each exported so that other packages (and
// tests) can use the same rules the grader uses:
//
//  1. ParseRule reads the comparison keys of the notebook-level and
//     cell-level metadata.grader objects into a Rule. The cell wins key by
//     key. Every problem is reported at once (go-multierror), because an
//     author fixing a notebook wants the whole list, not one error per run.
//  2. Normalize turns raw nbformat outputs into what a learner sees in
//     Jupyter: consecutive stream outputs are coalesced per stream name, ANSI
//     escapes are dropped, backspaces erase and carriage returns overwrite the
//     current line (so tqdm-style progress bars collapse to their last
//     state), and CRLF becomes LF. Text then extracts one target (stdout,
//     stderr or a MIME type) from the outputs; errors are not a target and are
//     reported by FirstError.
//  3. Outputs compares expected and actual outputs under a Rule with one of
//     the modes exact, tokens, numeric, regex, lines-unordered, error,
//     no-error, image, ignore, skip, and returns a Result.
//
// Results say why an output was rejected ("output differs from the expected
// output at line 2 (token 3)") but never how to fix it: the expected text
// only appears in a Result (Expected, Diff) when the rule sets show_expected,
// because the reference outputs of check cells are often the answer itself.
// Learner text that is shown is capped, and binary data is shown as a size and
// an MD5 prefix, so a result always fits in a feedback page or a JUnit file.
//
// The token and numeric modes follow the Kattis/DOMjudge default output
// validator (tokens split on whitespace, case-insensitive by default,
// |s-a| <= atol OR |s-a| <= rtol*|a|, NaN equals NaN, infinities match by
// sign), since that is the behaviour programming-exercise authors know.
package compare
