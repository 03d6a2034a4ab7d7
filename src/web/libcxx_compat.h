// Force-included by the browser build only (cmake/Web.cmake): what emscripten 3.1.6's libc++ snapshot lacks of
// the C++20 the core uses. Native builds (GCC 12 / libstdc++, clang-14 / libc++ 14) never see this file.
#pragma once
#ifdef __cplusplus
#include <version>
#if !defined(__cpp_lib_bit_cast)
#include <cstring>
#include <type_traits>
namespace std {
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && is_trivially_copyable_v<To> && is_trivially_copyable_v<From>)
inline To bit_cast(const From& from) noexcept {
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}
}  // namespace std
#endif
#endif
