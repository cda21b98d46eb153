#include "ibv_api.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace tutti::transport::ib {

int IbvApi::queryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) const {
  std::memset(attr, 0, sizeof *attr);
  verbs_context* vctx = verbs_get_ctx_op(ctx, query_port);
  if (vctx) return vctx->query_port(ctx, port, attr, sizeof *attr);
  return queryPortCompat(ctx, port, attr);
}

namespace {

struct Loaded {
  IbvApi api{};
  std::string why;
  bool ok = false;
};

template <typename F>
bool resolve(void* lib, const char* name, F& fn, std::string& why) {
  void* p = dlsym(lib, name);
  if (!p) {
    why = std::string("libibverbs.so.1 lacks ") + name;
    return false;
  }
  fn = reinterpret_cast<F>(p);
  return true;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = std::string(e ? e : "dlopen(libibverbs.so.1) failed") +
            " (install rdma-core: apt-get install libibverbs1 ibverbs-providers)";
    return l;
  }
  IbvApi& a = l.api;
  std::string& w = l.why;
  l.ok = resolve(lib, "ibv_get_device_list", a.getDeviceList, w) &&
         resolve(lib, "ibv_free_device_list", a.freeDeviceList, w) &&
         resolve(lib, "ibv_get_device_name", a.getDeviceName, w) &&
         resolve(lib, "ibv_open_device", a.openDevice, w) &&
         resolve(lib, "ibv_close_device", a.closeDevice, w) &&
         resolve(lib, "ibv_query_device", a.queryDevice, w) &&
         resolve(lib, "ibv_query_port", a.queryPortCompat, w) &&
         resolve(lib, "ibv_query_gid", a.queryGid, w) &&
         resolve(lib, "ibv_alloc_pd", a.allocPd, w) &&
         resolve(lib, "ibv_dealloc_pd", a.deallocPd, w) && resolve(lib, "ibv_reg_mr", a.regMr, w) &&
         resolve(lib, "ibv_dereg_mr", a.deregMr, w) &&
         resolve(lib, "ibv_create_comp_channel", a.createCompChannel, w) &&
         resolve(lib, "ibv_destroy_comp_channel", a.destroyCompChannel, w) &&
         resolve(lib, "ibv_create_cq", a.createCq, w) &&
         resolve(lib, "ibv_destroy_cq", a.destroyCq, w) &&
         resolve(lib, "ibv_get_cq_event", a.getCqEvent, w) &&
         resolve(lib, "ibv_ack_cq_events", a.ackCqEvents, w) &&
         resolve(lib, "ibv_create_qp", a.createQp, w) &&
         resolve(lib, "ibv_modify_qp", a.modifyQp, w) &&
         resolve(lib, "ibv_destroy_qp", a.destroyQp, w) &&
         resolve(lib, "ibv_wc_status_str", a.wcStatusStr, w);
  // The library stays loaded for the life of the process (providers hold references).
  return l;
}

}  // namespace

const IbvApi* loadIbvApi(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace tutti::transport::ib
