'use strict';
// The shop's services on their stores (--store db, issue 50), as the Python services'
// (services/domains/shop/dbstore.py) and Go's (services/go/stores.go): with IPCLAB_STORE=db
// each request reads its record from the store its service owns instead of the fixture in
// memory. Four services read the MongoDB-wire store (FerretDB) at IPCLAB_MONGO_URL with
// npm's official `mongodb` driver, shipping reads MariaDB at IPCLAB_MYSQL_URL with `mysql2`;
// the same collections, table and query as Python (services/domains/shop/stores.py seeds
// them), so an answer is the in-memory one, byte for byte. The fixture still validates a
// request (an unknown product is a 404 before any store is asked).
//
// Pools and sockets as the Python clients': MongoDB at most 100 connections (pymongo's
// default maxPoolSize), TCP_NODELAY on and keep-alive after 120 s idle (the driver's own
// settings, as pymongo's; Node cannot set the probes' interval and count, which stay the
// kernel's where pymongo lowers them to 10 s and 9); MariaDB at most 10 connections, all
// kept when idle (dbstore.py's POOL_SIZE, aiomysql's pool), TCP_NODELAY on and keep-alive
// on with the kernel's timing (mysql2's defaults, as aiomysql sets them). Both clients
// connect on first use, as in Python.
const { notFound } = require('./errors');

const STORE_ENV = 'IPCLAB_STORE';
const MONGO_ENV = 'IPCLAB_MONGO_URL';
const MYSQL_ENV = 'IPCLAB_MYSQL_URL';
const MONGO_POOL = 100; // pymongo's maxPoolSize
const MYSQL_POOL = 10; // dbstore.py's POOL_SIZE

// stores.py's shipping_select
const shippingSelect = (id) =>
  'SELECT carrier, method, price, min_days, max_days FROM shipping ' +
  `WHERE product_id = ${BigInt(id)} ORDER BY position`;

class Stores {
  constructor(mongoURL, mysqlURL) {
    if (!mongoURL || !mysqlURL) {
      throw new Error(`--store db: ${MONGO_ENV} and ${MYSQL_ENV} must both be set`);
    }
    this.mongoURL = mongoURL;
    this.mysqlURL = mysqlURL;
    this.db = null;
    this.pool = null;
  }

  static fromEnv(env = process.env) {
    return env[STORE_ENV] === 'db' ? new Stores(env[MONGO_ENV], env[MYSQL_ENV]) : null;
  }

  database() {
    if (this.db === null) {
      const { MongoClient } = require('mongodb');
      // the URL's default database; the client connects on its first operation
      this.db = new MongoClient(this.mongoURL, { maxPoolSize: MONGO_POOL }).db();
    }
    return this.db;
  }

  // A record's _id in its collection: its id (a BigInt) in decimal (stores.py's key; a
  // string, which FerretDB looks up in its SQL backend instead of scanning the collection).
  static key(id) {
    return BigInt(id).toString();
  }

  // The document id of collection without its _id, null if absent.
  document(collection, id) {
    return this.database()
      .collection(collection)
      .findOne({ _id: Stores.key(id) }, { projection: { _id: 0 } });
  }

  // The five services' answers, as Fixture.answer gives them from memory.
  async product(id) {
    const found = await this.document('products', id);
    if (found === null) throw notFound(`no product ${id}`);
    return found;
  }

  async listed(collection, id) {
    const found = await this.document(collection, id);
    return found ? found[collection] : [];
  }

  async cart(id) {
    const found = await this.document('carts', id);
    return found !== null ? found : { customer_id: id.toString(), items: [], total: 0 };
  }

  async shipping(id) {
    if (this.pool === null) {
      const mysql = require('mysql2/promise');
      this.pool = mysql.createPool({
        uri: this.mysqlURL,
        connectionLimit: MYSQL_POOL,
        maxIdle: MYSQL_POOL, // aiomysql keeps every released connection
        enableKeepAlive: true,
        keepAliveInitialDelay: 0, // 0: the kernel's idle time, as aiomysql's SO_KEEPALIVE
      });
    }
    // no parameters: the text protocol, one round trip, as aiomysql's cursor.execute
    const [rows] = await this.pool.query(shippingSelect(id));
    return rows.map((r) => ({ ...r, price: Number(r.price) })); // DECIMAL as float, as Python
  }
}

module.exports = { Stores, shippingSelect };
