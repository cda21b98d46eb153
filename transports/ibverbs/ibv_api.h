// libibverbs loaded lazily with dlopen: a binary built with the verbs transport runs where
// libibverbs (or any RDMA device) is absent, and says why the transport is unavailable.
// Only the control-path entry points are resolved here; the data path (ibv_post_send,
// ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) is inline in <infiniband/verbs.h> and goes
// through the provider's ops table, so it needs no symbol.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace tutti::transport::ib {

struct IbvApi {
  ibv_device** (*getDeviceList)(int*);
  void (*freeDeviceList)(ibv_device**);
  const char* (*getDeviceName)(ibv_device*);
  ibv_context* (*openDevice)(ibv_device*);
  int (*closeDevice)(ibv_context*);
  int (*queryDevice)(ibv_context*, ibv_device_attr*);
  int (*queryPortCompat)(ibv_context*, uint8_t, void*);  // exported ibv_query_port
  int (*queryGid)(ibv_context*, uint8_t, int, ibv_gid*);
  ibv_pd* (*allocPd)(ibv_context*);
  int (*deallocPd)(ibv_pd*);
  ibv_mr* (*regMr)(ibv_pd*, void*, size_t, int);
  int (*deregMr)(ibv_mr*);
  ibv_comp_channel* (*createCompChannel)(ibv_context*);
  int (*destroyCompChannel)(ibv_comp_channel*);
  ibv_cq* (*createCq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroyCq)(ibv_cq*);
  int (*getCqEvent)(ibv_comp_channel*, ibv_cq**, void**);
  void (*ackCqEvents)(ibv_cq*, unsigned int);
  ibv_qp* (*createQp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modifyQp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroyQp)(ibv_qp*);
  const char* (*wcStatusStr)(ibv_wc_status);

  // ibv_query_port through the provider's extended op when present (as the inline wrapper
  // in verbs.h does), else the exported compat entry point.
  int queryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) const;
};

// The loaded API, or nullptr with *why set ("libibverbs.so.1: cannot open shared object
// file ..."). Loads once per process; thread-safe.
const IbvApi* loadIbvApi(std::string* why);

}  // namespace tutti::transport::ib
