// te-materialize-checks refuses checks whose failure no status can report.
// RUN: te-opt %s -split-input-file --te-materialize-checks -verify-diagnostics

// A check must sit in the entry block, where the status is computed.
func.func @nested(%a: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{'te.check' op must be in the entry block of its function, where the kernel's status is computed}}
    te.check %a message "nested"
  }
  return
}

// -----

// expected-error @+1 {{'func.func' op has te.check ops, which only a public function with one block (a kernel entry point) can report}}
func.func private @helper(%a: i1) {
  te.check %a message "in a helper"
  return
}
