#pragma once
/// File helpers shared by every layer: whole-file reads with clear errors, and atomic writes
/// (a temporary file in the destination's folder, renamed over the destination only once it
/// is complete), so that an interrupted or failed write never leaves a half-written file and
/// an existing file is replaced only when the caller says so.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace grafx {

/// The largest input grafx reads whole (graph and parameter files; audio, counted as float32
/// samples in memory), in bytes: 1 GiB unless changed (`grafx --max-input-mb`). Larger inputs,
/// and endless ones such as /dev/zero, are refused with IoError [grafx.io.too_large] before
/// memory runs out.
uint64_t input_limit();
void set_input_limit(uint64_t bytes);

/// Throws IoError [grafx.io.too_large] naming `path` when `bytes` exceed input_limit().
void check_input_size(const std::string& path, uint64_t bytes);

/// Reads a whole file; throws IoError [grafx.io.unreadable] naming the path and the reason, and
/// [grafx.io.too_large] past input_limit() (read in pieces, so endless files stop there).
std::string read_text_file(const std::string& path);

/// Throws IoError `code` for a path that holds a NUL character: the system would read or write
/// the file named by its part before the NUL (a path from Python may hold one).
void check_path(const std::string& path, const std::string& code);

/// Throws IoError [grafx.io.exists] when `path` exists and `overwrite` is false, and
/// [grafx.io.unwritable] when its folder does not exist.
void check_writable(const std::string& path, bool overwrite);

/// Throws IoError [grafx.io.overwrites_input] when `output` is the same file as one of
/// `inputs` (by file identity, so other spellings and links count), whatever --force says: a
/// command never replaces what it reads.
void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs);
/// The same for an output folder replaced whole: IoError [grafx.io.overwrites_input] when one of
/// `inputs` is `folder` or lies inside it (by real paths, links resolved).
void check_no_input_inside(const std::string& folder, const std::vector<std::string>& inputs);

/// Calls `write` with a temporary path beside `path` (same extension), flushes it to the disk
/// (fsync), renames it to `path` and syncs the folder, so that a crash or power loss leaves the
/// old file or the new one, never a torn one. If `write` throws, the temporary file is removed
/// and the exception propagates; temporary files of `path` left by killed processes are
/// removed first.
void write_atomically(const std::string& path, bool overwrite,
                      const std::function<void(const std::string& temporary_path)>& write);

/// Writes `contents` to `path` atomically.
void write_text_file(const std::string& path, const std::string& contents, bool overwrite);

}  // namespace grafx
