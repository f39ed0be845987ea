'use strict';
// AMQP 0-9-1 through RabbitMQ, the topology of transports/amqp.py and amqp.go: one queue per
// service ("ipclab.<service>", non-durable, not exclusive, not auto-delete) declared by both
// sides; requests through the default exchange, transient, mandatory; services consume with
// manual acks and prefetch 64, publish the reply to reply_to with the same correlation id,
// then ack; the gateway has one connection, one channel and one exclusive server-named reply
// queue consumed without acks. Body {"op", "request"}; reply {"result"} or {"error", "message"}.
//
// Reconnection as aio-pika's connect_robust and amqp.go: the first connection must succeed;
// a connection lost later is dialled again at once, then every 5 s until it succeeds, and
// the channel, its QoS, the queues and the consumers are declared again. While the gateway
// has no connection a call is "unavailable" at once; a call whose reply was lost with the
// old connection waits for its deadline ("timeout").
const amqp = require('amqplib');
const { DOCUMENT, UNWRAP, requestId, serviceKey, settle } = require('./data');
const { asServiceError, fromCode, timeout, unavailable } = require('./errors');
const { KEEPALIVE_DELAY_MS } = require('./limits');

const PREFETCH = 64;
const RECONNECT_INTERVAL_MS = 5000; // aio-pika's RobustConnection default
const QUEUE = { durable: false, exclusive: false, autoDelete: false };
// TCP_NODELAY and TCP keep-alive on the broker connection (net.connect's options)
const SOCKET = { noDelay: true, keepAlive: true, keepAliveDelay: KEEPALIVE_DELAY_MS };

const queueName = (service) => `ipclab.${service}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// robust keeps one connection to url: setup runs on every new connection (the first one
// must succeed); when the connection closes, lost() runs and it is dialled again.
async function robust(url, who, setup, lost) {
  const connect = async () => {
    const conn = await amqp.connect(url, SOCKET);
    conn.on('error', (e) => console.error(`amqp ${who}: ${e.message}`));
    try {
      await setup(conn);
    } catch (e) {
      await conn.close().catch(() => {});
      throw e;
    }
    conn.once('close', async (e) => {
      lost();
      console.error(`amqp ${who}: connection closed (${e ? e.message : 'no error'}); reconnecting`);
      for (;;) {
        try {
          await connect();
          console.error(`amqp ${who}: reconnected`);
          return;
        } catch (err) {
          console.error(`amqp ${who}: reconnect failed (${err.message}); again in 5 s`);
          await sleep(RECONNECT_INTERVAL_MS);
        }
      }
    });
    return conn;
  };
  return connect();
}

function handle(fixture, service, body, done) {
  const failed = (err) => {
    const e = asServiceError(err);
    done(JSON.stringify({ error: e.code, message: e.message }));
  };
  let doc;
  let request;
  try {
    doc = JSON.parse(body);
    request = doc.request || {};
  } catch (err) {
    return failed(err);
  }
  if (doc.op === 'ping') return done('{"result":{}}');
  const key = serviceKey(service);
  settle(
    () => {
      if (doc.op !== 'get') throw fromCode('bad_request', `no operation ${doc.op}`);
      return fixture.answer(service, requestId(key, request[key]));
    },
    (err, value) => (err ? failed(err) : done(`{"result":${DOCUMENT[service](value)}}`)),
  );
}

async function serveAMQP(fixture, service, url) {
  await robust(
    url,
    service,
    async (conn) => {
      const ch = await conn.createChannel();
      await ch.prefetch(PREFETCH);
      await ch.assertQueue(queueName(service), QUEUE);
      await ch.consume(
        queueName(service),
        (msg) => {
          if (msg === null) return; // the broker cancelled the consumer
          handle(fixture, service, msg.content, (reply) => {
            const { replyTo, correlationId } = msg.properties;
            try {
              if (replyTo) ch.sendToQueue(replyTo, Buffer.from(reply), { correlationId, deliveryMode: 1 });
              ch.ack(msg);
            } catch (e) {
              // the channel closed with its connection: the broker requeues the request
              console.error(`amqp ${service}: ${e.message}`);
            }
          });
        },
        { noAck: false },
      );
    },
    () => {},
  );
}

class AmqpClients {
  constructor(services) {
    this.services = services;
    this.session = null; // {ch, replyQ}; null while reconnecting
    this.prefix = `${process.pid}-`;
    this.next = 0;
    this.pending = new Map();
    this.counts = { published: 0, replies: 0, unmatched: 0, returned: 0 };
    this.byOp = {};
  }

  async connect(url) {
    await robust(url, 'gateway', (conn) => this.setup(conn), () => {
      this.session = null;
    });
    return this;
  }

  async setup(conn) {
    const ch = await conn.createChannel();
    ch.on('error', (e) => console.error(`amqp gateway channel: ${e.message}`));
    for (const s of this.services) await ch.assertQueue(queueName(s), QUEUE);
    const q = await ch.assertQueue('', { durable: false, exclusive: true, autoDelete: true });
    await ch.consume(
      q.queue,
      (msg) => {
        if (msg === null) return;
        let reply;
        try {
          reply = JSON.parse(msg.content);
        } catch {
          reply = { error: 'internal', message: 'a non-JSON reply' };
        }
        this.deliver(msg.properties.correlationId, reply, false);
      },
      { noAck: true, exclusive: true },
    );
    ch.on('return', (msg) => {
      const reply = { error: 'unavailable', message: 'no queue for the request' };
      this.deliver(msg.properties.correlationId, reply, true);
    });
    this.session = { ch, replyQ: q.queue };
  }

  deliver(cid, reply, returned) {
    if (returned) this.counts.returned += 1;
    else this.counts.replies += 1;
    const waiter = this.pending.get(cid);
    this.pending.delete(cid);
    if (waiter) waiter(reply);
    else if (!returned) this.counts.unmatched += 1;
  }

  call(service, op, id, limitMs) {
    const request = op === 'get' ? `{"${serviceKey(service)}":${id}}` : '{}';
    const body = Buffer.from(`{"op":"${op}","request":${request}}`);
    const cid = this.prefix + this.next++;
    return new Promise((resolve, reject) => {
      const s = this.session;
      if (s === null) {
        reject(unavailable('broker: the connection is lost, reconnecting'));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(cid);
        reject(timeout(`${service} did not answer within the deadline`));
      }, limitMs);
      this.pending.set(cid, (reply) => {
        clearTimeout(timer);
        if (reply.error) reject(fromCode(reply.error, reply.message));
        else resolve(op === 'get' ? UNWRAP[service](reply.result) : null);
      });
      try {
        s.ch.sendToQueue(queueName(service), body, {
          mandatory: true, correlationId: cid, replyTo: s.replyQ, deliveryMode: 1,
        });
      } catch (e) {
        clearTimeout(timer);
        this.pending.delete(cid);
        reject(unavailable(`broker: ${e.message}`));
        return;
      }
      this.counts.published += 1;
      this.byOp[op] = (this.byOp[op] || 0) + 1;
    });
  }

  stats() {
    return JSON.stringify({ ...this.counts, pending: this.pending.size, published_by_op: this.byOp });
  }

  close() {}
}

module.exports = { serveAMQP, AmqpClients, PREFETCH };
