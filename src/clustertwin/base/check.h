#pragma once
/// Invariant checks that abort with file, line and message in every build (not only Debug):
/// a broken invariant is a bug in clustertwin, never a user error (those are Result values).

#include <cstdio>
#include <cstdlib>

#define CT_CHECK(cond, msg)                                                                     \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "internal error: %s:%d: check failed: %s: %s\n", __FILE__, __LINE__, \
                   #cond, msg);                                                                 \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)
