// Preloaded with `node --require` so that a server that listens on all interfaces
// (server-everything's HTTP modes) binds 127.0.0.1 only: tests stay on loopback.
"use strict";
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    if (first.path === undefined) {
      args[0] = { ...first, host: "127.0.0.1" };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === "string") {
      args[1] = "127.0.0.1";
    } else {
      args.splice(1, 0, "127.0.0.1");
    }
  } else if (first === undefined || typeof first === "function") {
    args.unshift(0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
