// Package envprobe attests what a grading runner can actually run.
//
// The TorchAir tutorial's NPU questions only give meaningful results on a
// narrow, version-locked stack: an Atlas A2, Atlas A3 or Ascend 950 device,
// a torch_npu build from the TorchAir version table, the torch it was built
// for, and the CANN release that table row names. A runner that is off the
// table still executes notebooks, but its outputs differ from the reference
// in ways that look like learner mistakes. So before a runner takes jobs it
// collects its environment (Collect), checks it against the table
// (Validate), and advertises the result as a Report. The queue then routes
// a cell's requirements to runners with Report.Satisfies, and scores are
// tagged with Report.Fingerprint so a result can be traced to the stack that
// produced it.
//
// The version table, the supported product patterns and the features by
// TorchAir release live in one embedded file, versiontable.json, so that
// routing, validation and documentation cannot disagree.
//
// Collection reads only local sources: a small Python probe run with the
// runner's interpreter, ascend_toolkit_install.info, `npu-smi info` and the
// CANN platform_config ini. Every path and command is injectable through
// Options, which is how the tests feed it recorded output from real Ascend
// hosts (testdata/recordings) instead of needing an NPU.
//
// The NPUs themselves are found from the host's /dev/davinciN nodes
// (npudevice.go), and runner slots are pinned to them (Slots).
//
// Decisions on rules the reference leaves open:
//
//   - A machine without a usable NPU is a supported runner for CPU questions:
//     profile "cpu", verdict "ok", plus an informational warning.
//   - A torch_npu dev build (for example 2.9.0.dev20260101) has no TorchAir
//     release: verdict "warn", torchair_release empty, and only features
//     observed directly (the npugraph_ex backend) are advertised. Dev builds
//     are how master-only features get tested, so refusing them outright
//     would make those questions unrunnable; leaving the release empty keeps
//     every release-gated question away from them.
//   - Any other torch_npu string missing from the table is "unsupported".
//   - A Python version the row does not list is "warn": torch_npu imported,
//     so the build works, but it is outside the tested matrix.
//   - A CANN version that could not be found at all is "warn"; one whose
//     normalised prefix differs from the row is "unsupported"; a matching
//     prefix with an extra suffix (8.5.0.B120) is "warn".
//   - An NPU host whose device is not A2/A3/950 gets an empty profile and
//     "unsupported"; Options.CPUOnly turns such a host into a cpu runner.
package envprobe
