# Sourced by the bench/h200_*.sh runs on the GPU machine, from the repository root: the Vulkan loader and GL
# dispatch libraries from .gl/, the NVIDIA ICD, the carried libraries of build-h200/lib (after the system's
# libstdc++: a carried one ahead of it stops the NVIDIA Vulkan driver from loading), the GPU adapter, and
# /work/main pointing here (the tests find their fixtures by the build-time path).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/build-h200/lib:${LD_LIBRARY_PATH:-}
export EWGPU_ADAPTER=gpu
mkdir -p /work && [ -e /work/main ] || ln -s "$PWD" /work/main
