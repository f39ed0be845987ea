'use strict';
// The shop's records and their JSON, byte for byte as the Python (orjson) and Go gateways
// write them. The records come from the fixture the Python generator writes
// (ipclab_services.domains.shop.write_fixture, the file IPCLAB_FIXTURE names), as in Go.
//
// JSON: each document is written field by field in the order of shop.proto and data.py:
// strings with JSON.stringify (as orjson: UTF-8, no HTML escaping), integers as they are
// (numbers, BigInts, or the decimal strings gRPC's int64 arrive as), floats as the shortest
// decimal that round-trips with ".0" kept on whole values (orjson, Go's Float).
const fs = require('node:fs');
const { badRequest, notFound, ServiceError } = require('./errors');

const S = JSON.stringify;
const I = (v) => String(v);

function F(x) {
  const s = String(Number(x));
  return /[.eEN]/.test(s) ? s : `${s}.0`;
}

const list = (items, enc) => `[${items.map(enc).join(',')}]`;

const product = (p) =>
  `{"product_id":${I(p.product_id)},"name":${S(p.name)},"price":${F(p.price)},` +
  `"description":${S(p.description)},"color":${S(p.color)},"image_url":${S(p.image_url)}}`;
const review = (r) =>
  `{"review_id":${I(r.review_id)},"customer_id":${I(r.customer_id)},"rating":${I(r.rating)},` +
  `"title":${S(r.title)},"body":${S(r.body)}}`;
const recommendation = (r) =>
  `{"product_id":${I(r.product_id)},"name":${S(r.name)},"price":${F(r.price)}}`;
const option = (o) =>
  `{"carrier":${S(o.carrier)},"method":${S(o.method)},"price":${F(o.price)},` +
  `"min_days":${I(o.min_days)},"max_days":${I(o.max_days)}}`;
const item = (i) =>
  `{"product_id":${I(i.product_id)},"name":${S(i.name)},"quantity":${I(i.quantity)},` +
  `"unit_price":${F(i.unit_price)}}`;
const cart = (c) =>
  c == null
    ? 'null'
    : `{"customer_id":${I(c.customer_id)},"items":${list(c.items, item)},"total":${F(c.total)}}`;

// The page the gateway answers, from the five services' answers (as values).
const page = (info, reviews, recs, options, theCart) =>
  `{"product":${product(info)},"reviews":${list(reviews, review)},` +
  `"recommendations":${list(recs, recommendation)},"shipping":${list(options, option)},` +
  `"cart":${cart(theCart)}}`;

// Each service's "get" answer as the document REST and AMQP carry (data.py's keys).
const DOCUMENT = {
  'product-info': product,
  reviews: (rs) => `{"reviews":${list(rs, review)}}`,
  recommendations: (rs) => `{"recommendations":${list(rs, recommendation)}}`,
  shipping: (os) => `{"options":${list(os, option)}}`,
  cart: (c) => `{"cart":${cart(c)}}`,
};

// ...and the value inside a parsed document, as the gateway merges it.
const UNWRAP = {
  'product-info': (d) => d,
  reviews: (d) => d.reviews,
  recommendations: (d) => d.recommendations,
  shipping: (d) => d.options,
  cart: (d) => d.cart,
};

// The request field each service reads.
const serviceKey = (service) => (service === 'cart' ? 'customer_id' : 'product_id');

class Fixture {
  constructor(doc) {
    Object.assign(this, doc);
    this.size = BigInt(doc.catalogue_size);
    this.customerCount = BigInt(doc.customers);
    this.db = null; // the stores (lib/stores.js) with --store db
  }

  static load(path, seed, catalogue, customers) {
    let doc;
    try {
      doc = JSON.parse(fs.readFileSync(path, 'utf8'));
    } catch (e) {
      throw new Error(`the shop fixture (IPCLAB_FIXTURE) ${path}: ${e.message}`);
    }
    if (doc.seed !== seed || doc.catalogue_size !== catalogue || doc.customers !== customers) {
      throw new Error(
        `the shop fixture ${path} is for seed ${doc.seed}, ${doc.catalogue_size} products, ` +
          `${doc.customers} customers; the environment asks for ${seed}, ${catalogue}, ${customers}`,
      );
    }
    return new Fixture(doc);
  }

  index(id) {
    if (id < 0n) throw badRequest('product_id must not be negative');
    if (id < 1n || id > this.size) throw notFound(`no product ${id}`);
    return Number(id - 1n);
  }

  // The service's answer to "get" for an id (a BigInt), as a value, or with stores
  // (--store db, stores.js) a promise of it, read after the request is validated here.
  answer(service, id) {
    if (this.db) return this.stored(service, id);
    switch (service) {
      case 'product-info':
        return this.products[this.index(id)];
      case 'reviews':
        return this.reviews[this.index(id)] || [];
      case 'recommendations':
        return this.recommendations[this.index(id)];
      case 'shipping':
        return this.shipping[this.index(id)];
      case 'cart':
        if (id < 0n) throw badRequest('customer_id must not be negative');
        if (id === 0n) return null;
        if (id <= this.customerCount) return this.carts[Number(id - 1n)];
        return { customer_id: id.toString(), items: [], total: 0 };
      default:
        throw new ServiceError('internal', `unknown service ${service}`);
    }
  }

  stored(service, id) {
    switch (service) {
      case 'product-info':
        this.index(id);
        return this.db.product(id);
      case 'reviews':
      case 'recommendations':
        this.index(id);
        return this.db.listed(service, id);
      case 'shipping':
        this.index(id);
        return this.db.shipping(id);
      case 'cart':
        if (id < 0n) throw badRequest('customer_id must not be negative');
        return id === 0n ? null : this.db.cart(id);
      default:
        throw new ServiceError('internal', `unknown service ${service}`);
    }
  }
}

// services.py's _id: an integer (a JSON number, or a decimal string as REST's query
// carries it), not negative; anything else a bad_request naming what came.
function requestId(key, value) {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^\s*[+-]?[0-9]+\s*$/.test(value)) return BigInt(value.trim());
  const shown = value === undefined || value === null ? 'None' : `'${value}'`;
  throw badRequest(`${key} must be an integer, got ${shown}`);
}

// done(err, value) with what answer() gives: at once for a value (memory, as before the
// stores: no promise, no extra turn of the event loop), when it settles for a promise.
function settle(answer, done) {
  let value;
  try {
    value = answer();
  } catch (err) {
    done(err);
    return;
  }
  if (value && typeof value.then === 'function') value.then((v) => done(null, v), done);
  else done(null, value);
}

module.exports = { Fixture, DOCUMENT, UNWRAP, page, serviceKey, requestId, settle, F };
