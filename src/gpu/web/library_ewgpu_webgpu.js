// The gpu layer's browser backend, JS half (linked with --js-library; src/gpu/web/webgpu_web.cpp is the C half and
// the only caller). It owns the GPU* objects of one GPUDevice in a handle table and speaks scalars: handles are
// small integers, 64-bit sizes and offsets arrive as doubles, descriptors as packed int/double arrays or JSON.
// The adapter and device are requested by the worker before the module starts (Module.ewgpuGpu = {adapter,
// device, info}); asynchronous results (mapAsync, popErrorScope, device loss, uncaptured errors) come back through
// the module's exports ewgpu_web_future_done and ewgpu_web_device_event. Written for this project from the
// WebGPU specification; it implements only what src/gpu/ calls.
mergeInto(LibraryManager.library, {
  $EWGPU: {
    table: [null],  // handle -> object; slot 0 is "none"
    free: [],
    mapsInFlight: 0,
    add: function(obj) {
      var id = EWGPU.free.length ? EWGPU.free.pop() : EWGPU.table.length;
      EWGPU.table[id] = obj;
      return id;
    },
    get: function(id) { return EWGPU.table[id]; },
    gpu: function() { return Module['ewgpuGpu'] || null; },
    device: function() { var g = EWGPU.gpu(); return g ? g.device : null; },
    cstr: function(s) {
      var n = lengthBytesUTF8(s) + 1;
      var p = _malloc(n);
      stringToUTF8(s, p, n);
      return p;
    },
    out: function(s, buf, cap) {  // writes s (UTF-8) into buf; returns its length, or -1 when it does not fit
      var n = lengthBytesUTF8(s);
      if (n + 1 > cap) return -1;
      stringToUTF8(s, buf, cap);
      return n;
    },
    event: function(kind, code, message) {
      var p = EWGPU.cstr(message || '');
      Module['_ewgpu_web_device_event'](kind, code, p);
      _free(p);
    },
    done: function(future, status, message) {
      var p = EWGPU.cstr(message || '');
      Module['_ewgpu_web_future_done'](future, status, p);
      _free(p);
      var w = Module['ewgpuOnFutureDone'];
      if (w) w();
    },
    filters: ['', 'validation', 'out-of-memory', 'internal'],
    errorType: function(e) {  // GPUError -> WGPUErrorType
      if (typeof GPUValidationError !== 'undefined' && e instanceof GPUValidationError) return 2;
      if (typeof GPUOutOfMemoryError !== 'undefined' && e instanceof GPUOutOfMemoryError) return 3;
      if (typeof GPUInternalError !== 'undefined' && e instanceof GPUInternalError) return 4;
      return 5;
    },
    hooked: false,
    hook: function() {  // device loss and uncaptured errors, once
      if (EWGPU.hooked) return;
      var d = EWGPU.device();
      if (!d) return;
      EWGPU.hooked = true;
      d.addEventListener('uncapturederror', function(ev) {
        EWGPU.event(1, EWGPU.errorType(ev.error), ev.error && ev.error.message);
      });
      d.lost.then(function(info) {
        if (EWGPU.destroyedByUs) return;  // reported synchronously by wgpuDeviceDestroy
        EWGPU.event(0, info.reason === 'destroyed' ? 2 : 1, info.message);
      });
    },
    destroyedByUs: false,
  },

  ewgpuJsReady__deps: ['$EWGPU'],
  ewgpuJsReady: function() {
    if (!EWGPU.device()) return 0;
    EWGPU.hook();
    // The worker writes streamed weights straight into the GPUBuffers the engine created (docs/web.md).
    Module['ewgpuObject'] = function(id) { return EWGPU.get(id); };
    return 1;
  },

  ewgpuJsAdapterInfo__deps: ['$EWGPU'],
  ewgpuJsAdapterInfo: function(buf, cap) {
    var g = EWGPU.gpu();
    var i = (g && (g.info || (g.adapter && g.adapter.info))) || {};
    return EWGPU.out(JSON.stringify({
      vendor: i.vendor || '', architecture: i.architecture || '', device: i.device || '',
      description: i.description || '', subgroupMinSize: i.subgroupMinSize || 0, subgroupMaxSize: i.subgroupMaxSize || 0,
      isFallbackAdapter: !!i.isFallbackAdapter,
    }), buf, cap);
  },

  ewgpuJsLimits__deps: ['$EWGPU'],
  ewgpuJsLimits: function(which, buf, cap) {
    var g = EWGPU.gpu();
    var l = g ? (which ? g.device.limits : g.adapter.limits) : null;
    var o = {};
    if (l) for (var k in l) if (typeof l[k] === 'number') o[k] = l[k];
    return EWGPU.out(JSON.stringify(o), buf, cap);
  },

  ewgpuJsHasFeature__deps: ['$EWGPU'],
  ewgpuJsHasFeature: function(which, name) {
    var g = EWGPU.gpu();
    if (!g) return 0;
    return (which ? g.device.features : g.adapter.features).has(UTF8ToString(name)) ? 1 : 0;
  },

  ewgpuJsHasWgslFeature: function(name) {
    var f = (typeof navigator !== 'undefined' && navigator.gpu) ? navigator.gpu.wgslLanguageFeatures : null;
    return f && f.has(UTF8ToString(name)) ? 1 : 0;
  },

  ewgpuJsDeviceDestroy__deps: ['$EWGPU'],
  ewgpuJsDeviceDestroy: function() {
    EWGPU.destroyedByUs = true;
    var d = EWGPU.device();
    if (d) d.destroy();
  },

  ewgpuJsPushErrorScope__deps: ['$EWGPU'],
  ewgpuJsPushErrorScope: function(filter) { EWGPU.device().pushErrorScope(EWGPU.filters[filter] || 'validation'); },

  // Popped without waiting; an error the scope caught is reported like an uncaptured one (Context::takeError).
  ewgpuJsPopErrorScope__deps: ['$EWGPU'],
  ewgpuJsPopErrorScope: function() {
    EWGPU.device().popErrorScope().then(function(e) {
      if (e) EWGPU.event(1, EWGPU.errorType(e), e.message);
    }, function(e) { EWGPU.event(1, 5, String(e)); });
  },

  ewgpuJsCreateBuffer__deps: ['$EWGPU'],
  ewgpuJsCreateBuffer: function(size, usage, label) {
    var b = EWGPU.device().createBuffer({size: size, usage: usage, label: UTF8ToString(label)});
    return EWGPU.add(b);
  },

  ewgpuJsBufferDestroy__deps: ['$EWGPU'],
  ewgpuJsBufferDestroy: function(id) { var b = EWGPU.get(id); if (b) b.destroy(); },

  ewgpuJsRelease__deps: ['$EWGPU'],
  ewgpuJsRelease: function(id) {
    if (!id || !EWGPU.table[id]) return;
    EWGPU.table[id].__ewgpuReleased = true;
    EWGPU.table[id] = null;
    EWGPU.free.push(id);
  },

  ewgpuJsWriteBuffer__deps: ['$EWGPU'],
  ewgpuJsWriteBuffer: function(id, offset, data, size) {
    EWGPU.device().queue.writeBuffer(EWGPU.get(id), offset, HEAPU8, data, size);
  },

  // Maps for reading, copies the bytes into the wasm heap at dst, unmaps at once and completes the future
  // (status 1 success, 3 error, 4 aborted: the buffer was released before the map resolved, dst is gone).
  ewgpuJsMapRead__deps: ['$EWGPU'],
  ewgpuJsMapRead: function(id, offset, size, future, dst) {
    var b = EWGPU.get(id);
    EWGPU.mapsInFlight++;
    b.mapAsync(GPUMapMode.READ, offset, size).then(function() {
      EWGPU.mapsInFlight--;
      if (b.__ewgpuReleased) { b.unmap(); EWGPU.done(future, 4, 'buffer released while mapping'); return; }
      HEAPU8.set(new Uint8Array(b.getMappedRange(offset, size)), dst);
      b.unmap();
      EWGPU.done(future, 1, '');
    }, function(e) {
      EWGPU.mapsInFlight--;
      EWGPU.done(future, b.__ewgpuReleased ? 4 : 3, String(e && e.message || e));
    });
  },

  ewgpuJsCreateShaderModule__deps: ['$EWGPU'],
  ewgpuJsCreateShaderModule: function(code, label) {
    return EWGPU.add(EWGPU.device().createShaderModule({code: UTF8ToString(code), label: UTF8ToString(label)}));
  },

  ewgpuJsCreateBindGroupLayout__deps: ['$EWGPU'],
  ewgpuJsCreateBindGroupLayout: function(entries, count, label) {
    var types = {2: 'uniform', 3: 'storage', 4: 'read-only-storage'};
    var e = [];
    for (var i = 0; i < count; i++) {
      e.push({binding: HEAP32[(entries >> 2) + 2 * i], visibility: GPUShaderStage.COMPUTE,
              buffer: {type: types[HEAP32[(entries >> 2) + 2 * i + 1]] || 'storage'}});
    }
    return EWGPU.add(EWGPU.device().createBindGroupLayout({entries: e, label: UTF8ToString(label)}));
  },

  ewgpuJsCreatePipelineLayout__deps: ['$EWGPU'],
  ewgpuJsCreatePipelineLayout: function(layouts, count) {
    var ls = [];
    for (var i = 0; i < count; i++) ls.push(EWGPU.get(HEAP32[(layouts >> 2) + i]));
    return EWGPU.add(EWGPU.device().createPipelineLayout({bindGroupLayouts: ls}));
  },

  ewgpuJsCreateComputePipeline__deps: ['$EWGPU'],
  ewgpuJsCreateComputePipeline: function(layout, module, entry, constants, label) {
    var compute = {module: EWGPU.get(module), constants: JSON.parse(UTF8ToString(constants))};
    var ep = UTF8ToString(entry);
    if (ep) compute.entryPoint = ep;
    var d = {layout: layout ? EWGPU.get(layout) : 'auto', compute: compute, label: UTF8ToString(label)};
    return EWGPU.add(EWGPU.device().createComputePipeline(d));
  },

  ewgpuJsCreateBindGroup__deps: ['$EWGPU'],
  ewgpuJsCreateBindGroup: function(layout, entries, count, label) {
    var e = [];
    for (var i = 0; i < count; i++) {
      var at = (entries >> 3) + 4 * i;
      var r = {buffer: EWGPU.get(HEAPF64[at + 1]), offset: HEAPF64[at + 2]};
      if (HEAPF64[at + 3] >= 0) r.size = HEAPF64[at + 3];
      e.push({binding: HEAPF64[at], resource: r});
    }
    return EWGPU.add(EWGPU.device().createBindGroup({layout: EWGPU.get(layout), entries: e, label: UTF8ToString(label)}));
  },

  ewgpuJsCreateCommandEncoder__deps: ['$EWGPU'],
  ewgpuJsCreateCommandEncoder: function() { return EWGPU.add(EWGPU.device().createCommandEncoder()); },

  ewgpuJsBeginComputePass__deps: ['$EWGPU'],
  ewgpuJsBeginComputePass: function(enc, set, begin, end) {
    var d = {};
    if (set) {
      d.timestampWrites = {querySet: EWGPU.get(set)};
      if (begin >= 0) d.timestampWrites.beginningOfPassWriteIndex = begin;
      if (end >= 0) d.timestampWrites.endOfPassWriteIndex = end;
    }
    return EWGPU.add(EWGPU.get(enc).beginComputePass(d));
  },

  ewgpuJsSetPipeline__deps: ['$EWGPU'],
  ewgpuJsSetPipeline: function(pass, pipeline) { EWGPU.get(pass).setPipeline(EWGPU.get(pipeline)); },

  ewgpuJsSetBindGroup__deps: ['$EWGPU'],
  ewgpuJsSetBindGroup: function(pass, index, group) { EWGPU.get(pass).setBindGroup(index, EWGPU.get(group)); },

  ewgpuJsDispatch__deps: ['$EWGPU'],
  ewgpuJsDispatch: function(pass, x, y, z) { EWGPU.get(pass).dispatchWorkgroups(x >>> 0, y >>> 0, z >>> 0); },

  ewgpuJsEndPass__deps: ['$EWGPU'],
  ewgpuJsEndPass: function(pass) { EWGPU.get(pass).end(); },

  ewgpuJsCopyBufferToBuffer__deps: ['$EWGPU'],
  ewgpuJsCopyBufferToBuffer: function(enc, src, so, dst, dof, size) {
    EWGPU.get(enc).copyBufferToBuffer(EWGPU.get(src), so, EWGPU.get(dst), dof, size);
  },

  ewgpuJsClearBuffer__deps: ['$EWGPU'],
  ewgpuJsClearBuffer: function(enc, buf, offset, size) {
    if (size < 0) EWGPU.get(enc).clearBuffer(EWGPU.get(buf), offset);
    else EWGPU.get(enc).clearBuffer(EWGPU.get(buf), offset, size);
  },

  ewgpuJsResolveQuerySet__deps: ['$EWGPU'],
  ewgpuJsResolveQuerySet: function(enc, set, first, count, dst, off) {
    EWGPU.get(enc).resolveQuerySet(EWGPU.get(set), first, count, EWGPU.get(dst), off);
  },

  ewgpuJsFinish__deps: ['$EWGPU'],
  ewgpuJsFinish: function(enc) { return EWGPU.add(EWGPU.get(enc).finish()); },

  ewgpuJsSubmit__deps: ['$EWGPU'],
  ewgpuJsSubmit: function(bufs, count) {
    var list = [];
    for (var i = 0; i < count; i++) list.push(EWGPU.get(HEAP32[(bufs >> 2) + i]));
    EWGPU.device().queue.submit(list);
  },

  ewgpuJsCreateQuerySet__deps: ['$EWGPU'],
  ewgpuJsCreateQuerySet: function(count) {
    return EWGPU.add(EWGPU.device().createQuerySet({type: 'timestamp', count: count}));
  },

  ewgpuJsQuerySetDestroy__deps: ['$EWGPU'],
  ewgpuJsQuerySetDestroy: function(set) { var s = EWGPU.get(set); if (s) s.destroy(); },

  // The browser host's channel to the worker (src/web/web_engine.cpp): one JSON message per call.
  ewgpuJsPost: function(json) {
    var f = Module['ewgpuOnMessage'];
    if (f) f(UTF8ToString(json));
  },

  ewgpuJsMapsInFlight__deps: ['$EWGPU'],
  ewgpuJsMapsInFlight: function() { return EWGPU.mapsInFlight; },
});
