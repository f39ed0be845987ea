'use strict';
// One role of a Node.js shop stack (issue 50), configured like services/serve.py and the
// Go roles (services/go/main.go) by environment only: IPCLAB_ROLE, IPCLAB_GATEWAY,
// IPCLAB_SERVICES, IPCLAB_TRANSPORT (rest|grpc|amqp), IPCLAB_HOST/PORT, IPCLAB_ADDR_<ROLE>,
// IPCLAB_AMQP_URL, IPCLAB_CALL_TIMEOUT_S, IPCLAB_SEQUENTIAL, and the data: IPCLAB_FIXTURE
// (the JSON file ipclab_services.domains.shop.write_fixture writes), checked against
// IPCLAB_SEED, IPCLAB_CATALOGUE_SIZE and IPCLAB_CUSTOMERS; with IPCLAB_STORE=db the services
// read their records from the stores at IPCLAB_MONGO_URL and IPCLAB_MYSQL_URL (lib/stores.js).
const { Fixture } = require('./lib/data');
const { Gateway, serveGateway } = require('./lib/gateway');

const env = (key, fallback) => (key in process.env ? process.env[key] : fallback);
const addrEnv = (role) => `IPCLAB_ADDR_${role.toUpperCase().replaceAll('-', '_')}`;

function envInt(key, fallback) {
  const v = env(key, fallback);
  if (!/^-?[0-9]+$/.test(v)) throw new Error(`${key} must be an integer, got ${v}`);
  return Number(v);
}

function fail(err) {
  console.error(`ipclab-services-node: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
}

function clients(transport, services, amqpURL) {
  const addresses = {};
  for (const s of services) if (process.env[addrEnv(s)]) addresses[s] = process.env[addrEnv(s)];
  switch (transport) {
    case 'rest':
      return new (require('./lib/rest').RestClients)(addresses);
    case 'grpc':
      return new (require('./lib/grpc').GrpcClients)(addresses);
    case 'amqp':
      return new (require('./lib/amqp').AmqpClients)(services).connect(amqpURL);
    default:
      throw new Error(`unknown transport ${transport} (rest, grpc, amqp)`);
  }
}

async function main() {
  const role = env('IPCLAB_ROLE', '');
  const services = env('IPCLAB_SERVICES', '').split(',').filter((s) => s);
  const transport = env('IPCLAB_TRANSPORT', '');
  const host = env('IPCLAB_HOST', '127.0.0.1');
  const port = envInt('IPCLAB_PORT', '0');
  const amqpURL = env('IPCLAB_AMQP_URL', '');
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));

  if (role === env('IPCLAB_GATEWAY', 'gateway')) {
    const seconds = Number(env('IPCLAB_CALL_TIMEOUT_S', '2.0'));
    if (!Number.isFinite(seconds)) throw new Error('IPCLAB_CALL_TIMEOUT_S must be a number');
    const c = await clients(transport, services, amqpURL);
    const sequential = env('IPCLAB_SEQUENTIAL', '0') === '1';
    await serveGateway(new Gateway(c, services, seconds * 1000, sequential), host, port);
    return;
  }
  if (!services.includes(role)) {
    throw new Error(`unknown role "${role}"; this stack's services: ${services.join(', ')}`);
  }
  const fixture = Fixture.load(
    env('IPCLAB_FIXTURE', ''),
    envInt('IPCLAB_SEED', '42'),
    envInt('IPCLAB_CATALOGUE_SIZE', '1000'),
    envInt('IPCLAB_CUSTOMERS', '500'),
  );
  fixture.db = require('./lib/stores').Stores.fromEnv(); // --store db: read from the stores
  switch (transport) {
    case 'rest':
      await require('./lib/rest').serveREST(fixture, role, host, port);
      break;
    case 'grpc':
      await require('./lib/grpc').serveGRPC(fixture, role, host, port);
      break;
    case 'amqp':
      await require('./lib/amqp').serveAMQP(fixture, role, amqpURL);
      break;
    default:
      throw new Error(`unknown transport ${transport} (rest, grpc, amqp)`);
  }
}

main().catch(fail);
