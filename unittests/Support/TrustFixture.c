/*===- TrustFixture.c - Libraries for FileTrustTest -----------------------===*\
|*                                                                            *|
|* Built twice: TRUST_FIXTURE_DEP gives libte-trust-dep.so, the other build   *|
|* libte-trust-user.so, which needs it and finds it only relative to itself   *|
|* (RUNPATH $ORIGIN/../lib), as installed te-mlir libraries find each other.  *|
\*===----------------------------------------------------------------------===*/

#define EXPORT __attribute__((visibility("default")))

#ifdef TRUST_FIXTURE_DEP
EXPORT int te_trust_dep_value(void) { return 42; }
#else
int te_trust_dep_value(void);
EXPORT int te_trust_value(void) { return te_trust_dep_value() + 1; }
#endif
