'use strict';
// gRPC: unary calls from shop.proto (services/proto/shop.proto, the file the Python and Go
// roles are generated from, loaded at start by @grpc/proto-loader); errors travel as status
// codes (NOT_FOUND, INVALID_ARGUMENT; UNAVAILABLE and DEADLINE_EXCEEDED become 503 and 504).
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { settle } = require('./data');
const { ServiceError, asServiceError, badRequest, notFound, timeout, unavailable } = require('./errors');

// The proto file beside the built sources (nodebuild copies services/proto/shop.proto).
const PROTO = process.env.IPCLAB_SHOP_PROTO || path.join(__dirname, '..', 'proto', 'shop.proto');

// snake_case fields as in the JSON; int64 as decimal strings (no precision lost); every
// field present (an empty list, a null cart).
const LOADER = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

const SERVICES = {
  'product-info': 'ProductInfo',
  reviews: 'ProductReviews',
  recommendations: 'ProductRecommendations',
  shipping: 'ProductShipping',
  cart: 'ShoppingCart',
};

// The value a service's Get answers, as a message (shop.proto's wrappers).
const WRAP = {
  'product-info': (v) => v,
  reviews: (v) => ({ reviews: v }),
  recommendations: (v) => ({ recommendations: v }),
  shipping: (v) => ({ options: v }),
  cart: (v) => ({ cart: v }),
};
const UNWRAP = {
  'product-info': (m) => m,
  reviews: (m) => m.reviews,
  recommendations: (m) => m.recommendations,
  shipping: (m) => m.options,
  cart: (m) => m.cart,
};

const TO_STATUS = {
  not_found: grpc.status.NOT_FOUND,
  bad_request: grpc.status.INVALID_ARGUMENT,
  unavailable: grpc.status.UNAVAILABLE,
  timeout: grpc.status.DEADLINE_EXCEEDED,
};

let shop;
function loadShop() {
  if (!shop) shop = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, LOADER)).ipclab.shop;
  return shop;
}

function grpcError(err) {
  const e = asServiceError(err);
  return { code: TO_STATUS[e.code] ?? grpc.status.INTERNAL, details: e.message };
}

function serveGRPC(fixture, service, host, port) {
  const ctor = loadShop()[SERVICES[service]];
  if (!ctor) return Promise.reject(new Error(`unknown service ${service}`));
  const key = service === 'cart' ? 'customer_id' : 'product_id';
  const server = new grpc.Server();
  server.addService(ctor.service, {
    Get(call, callback) {
      settle(
        () => fixture.answer(service, BigInt(call.request[key])),
        (err, v) => (err ? callback(grpcError(err)) : callback(null, WRAP[service](v))),
      );
    },
    Ping(_call, callback) {
      callback(null, {});
    },
  });
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(server),
    );
  });
}

function fromGRPC(service, err) {
  const msg = `${service}: ${err.details}`;
  switch (err.code) {
    case grpc.status.NOT_FOUND:
      return notFound(msg);
    case grpc.status.INVALID_ARGUMENT:
      return badRequest(msg);
    case grpc.status.UNAVAILABLE:
      return unavailable(msg);
    case grpc.status.DEADLINE_EXCEEDED:
      return timeout(msg);
    default:
      return new ServiceError('internal', msg);
  }
}

// One client, so one channel (one HTTP/2 connection), per service, opened at start.
class GrpcClients {
  constructor(addresses) {
    const pkg = loadShop();
    this.clients = {};
    for (const [service, address] of Object.entries(addresses)) {
      this.clients[service] = new pkg[SERVICES[service]](address, grpc.credentials.createInsecure());
    }
  }

  call(service, op, id, limitMs) {
    const client = this.clients[service];
    const key = service === 'cart' ? 'customer_id' : 'product_id';
    const request = op === 'get' ? { [key]: String(id) } : {};
    const method = op === 'get' ? 'Get' : 'Ping';
    return new Promise((resolve, reject) => {
      if (!client) {
        reject(unavailable(`${service}: no address`));
        return;
      }
      client[method](request, { deadline: Date.now() + limitMs }, (err, reply) => {
        if (err) reject(fromGRPC(service, err));
        else resolve(op === 'get' ? UNWRAP[service](reply) : null);
      });
    });
  }

  stats() {
    return '{}';
  }

  close() {
    for (const c of Object.values(this.clients)) c.close();
  }
}

module.exports = { serveGRPC, GrpcClients, PROTO };
