#pragma once
/// The catalog (catalog/**.yaml) compiled into the binary, so `clustertwin` runs from any
/// directory with no install step. `--catalog DIR` can point at a directory instead.

#include <span>

namespace clustertwin::config {

struct EmbeddedFile {
  const char* path;  ///< relative to catalog/, e.g. "gpus/gb300.yaml"
  const char* text;
};

/// Every embedded catalog file, sorted by path.
std::span<const EmbeddedFile> embedded_catalog();

}  // namespace clustertwin::config
