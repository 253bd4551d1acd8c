// te.check's verifier: at most three values, a printable one-line message
// whose placeholders name existing values.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @too_many(%a: i1, %x: i64) {
  // expected-error @+1 {{'te.check' op takes at most 3 values, got 4}}
  te.check %a, %x, %x, %x, %x message "{0}"
  return
}

// -----

func.func @missing_value(%a: i1, %x: i64) {
  // expected-error @+1 {{'te.check' op message refers to {1}, but the check has 1 values}}
  te.check %a, %x message "{0} and {1}"
  return
}

// -----

func.func @malformed(%a: i1, %x: i64) {
  // expected-error @+1 {{'te.check' op message has a malformed placeholder at column 5; write {0}, {1}, {2} or {loc}}}
  te.check %a, %x message "bad {x}"
  return
}

// -----

func.func @empty(%a: i1) {
  // expected-error @+1 {{'te.check' op needs a message saying what failed}}
  te.check %a message ""
  return
}

// -----

func.func @two_lines(%a: i1) {
  // expected-error @+1 {{'te.check' op message must be printable ASCII on one line}}
  te.check %a message "one\0Atwo"
  return
}
