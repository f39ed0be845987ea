package main

// The shop's services on their stores (--store db, issue 50), as the Python services'
// (services/domains/shop/dbstore.py): with IPCLAB_STORE=db each request reads its record
// from the store its service owns instead of the fixture in memory. Four services read the
// MongoDB-wire store (FerretDB) at IPCLAB_MONGO_URL with the official Go driver, shipping
// reads MariaDB at IPCLAB_MYSQL_URL with go-sql-driver/mysql; the same collections, table
// and query as Python (services/domains/shop/stores.py seeds them), so an answer is the
// in-memory one, byte for byte. The fixture still validates a request (an unknown product
// is a 404 before any store is asked), as services.py's _product_id does on data.exists.
//
// Pools and sockets as the Python clients': MongoDB at most 100 connections (pymongo's
// default maxPoolSize, which the Python services keep), TCP_NODELAY on (Go's default, as
// pymongo sets it) and keep-alive after 120 s idle, every 10 s, 9 probes (pymongo caps the
// kernel's timing so); MariaDB at most 10 connections, all kept when idle (dbstore.py's
// POOL_SIZE, aiomysql's pool), TCP_NODELAY on and keep-alive on with the kernel's timing
// (aiomysql sets both). Both clients connect on first use, as in Python.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const (
	storeEnv  = "IPCLAB_STORE" // "db": the services read their stores
	mongoEnv  = "IPCLAB_MONGO_URL"
	mysqlEnv  = "IPCLAB_MYSQL_URL"
	mongoPool = 100 // pymongo's maxPoolSize
	mysqlPool = 10  // dbstore.py's POOL_SIZE
	mysqlNet  = "ipclab-tcp"
	// stores.py's shipping_select, with the product's id in place of %d
	shippingSelect = "SELECT carrier, method, price, min_days, max_days FROM shipping " +
		"WHERE product_id = %d ORDER BY position"
)

// pymongo's keep-alive (pool_shared.py: the kernel's 7200 s / 75 s / 9 capped at 120 / 10 / 9)
var mongoKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 120 * time.Second,
	Interval: 10 * time.Second, Count: 9}

// aiomysql's: SO_KEEPALIVE on, the kernel's timing (negative: left as the kernel has it)
var mysqlKeepAlive = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}

func init() {
	mysql.RegisterDialContext(mysqlNet, func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{KeepAliveConfig: mysqlKeepAlive}
		return d.DialContext(ctx, "tcp", addr)
	})
}

// dbStores is what one service process reads (each client made on first use).
type dbStores struct {
	mongoURL, mysqlURL string
	mongoOnce, sqlOnce sync.Once
	db                 *mongo.Database
	sql                *sql.DB
	mongoErr, sqlErr   error
}

func newStores(mongoURL, mysqlURL string) (*dbStores, error) {
	if mongoURL == "" || mysqlURL == "" {
		return nil, fmt.Errorf("--store db: %s and %s must both be set", mongoEnv, mysqlEnv)
	}
	return &dbStores{mongoURL: mongoURL, mysqlURL: mysqlURL}, nil
}

func (s *dbStores) database() (*mongo.Database, error) {
	s.mongoOnce.Do(func() {
		dialer := &net.Dialer{KeepAliveConfig: mongoKeepAlive}
		opts := options.Client().ApplyURI(s.mongoURL).SetMaxPoolSize(mongoPool).SetDialer(dialer)
		client, err := mongo.Connect(opts)
		if err != nil {
			s.mongoErr = fmt.Errorf("--store db: %s: %w", mongoEnv, err)
			return
		}
		cs, err := url.Parse(s.mongoURL)
		if err != nil {
			s.mongoErr = fmt.Errorf("--store db: %s: %w", mongoEnv, err)
			return
		}
		s.db = client.Database(strings.TrimPrefix(cs.Path, "/")) // the URL's default database
	})
	return s.db, s.mongoErr
}

// storeKey is a record's _id in its collection: its id in decimal (stores.py's key; a
// string, which FerretDB looks up in its SQL backend instead of scanning the collection).
func storeKey(id int64) string {
	return strconv.FormatInt(id, 10)
}

// document decodes the document id of collection, without its _id, into out; false if absent.
func (s *dbStores) document(collection string, id int64, out any) (bool, error) {
	db, err := s.database()
	if err != nil {
		return false, err
	}
	projection := options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 0}})
	one := db.Collection(collection).FindOne(context.Background(),
		bson.D{{Key: "_id", Value: storeKey(id)}}, projection)
	if err := one.Decode(out); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (s *dbStores) product(id int64) (*Product, error) {
	var p Product
	found, err := s.document("products", id, &p)
	if err == nil && !found {
		err = notFound(fmt.Sprintf("no product %d", id))
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func (s *dbStores) reviews(id int64) ([]Review, error) {
	var doc struct {
		Reviews []Review `bson:"reviews"`
	}
	if _, err := s.document("reviews", id, &doc); err != nil {
		return nil, err
	}
	if doc.Reviews == nil {
		doc.Reviews = []Review{}
	}
	return doc.Reviews, nil
}

func (s *dbStores) recommendations(id int64) ([]Recommendation, error) {
	var doc struct {
		Recommendations []Recommendation `bson:"recommendations"`
	}
	if _, err := s.document("recommendations", id, &doc); err != nil {
		return nil, err
	}
	if doc.Recommendations == nil {
		doc.Recommendations = []Recommendation{}
	}
	return doc.Recommendations, nil
}

// cart is a customer's stored cart, or an empty one for a customer beyond them (not stored).
func (s *dbStores) cart(id int64) (*Cart, error) {
	var c Cart
	found, err := s.document("carts", id, &c)
	if err != nil {
		return nil, err
	}
	if !found {
		return &Cart{CustomerID: id, Items: []CartItem{}, Total: 0}, nil
	}
	if c.Items == nil {
		c.Items = []CartItem{}
	}
	return &c, nil
}

func (s *dbStores) pool() (*sql.DB, error) {
	s.sqlOnce.Do(func() {
		u, err := url.Parse(s.mysqlURL)
		if err != nil {
			s.sqlErr = fmt.Errorf("--store db: %s: %w", mysqlEnv, err)
			return
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password() // url.Parse has unescaped it
		cfg.Net, cfg.Addr = mysqlNet, u.Host
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			s.sqlErr = fmt.Errorf("--store db: %s: %w", mysqlEnv, err)
			return
		}
		s.sql = sql.OpenDB(connector)
		s.sql.SetMaxOpenConns(mysqlPool)
		s.sql.SetMaxIdleConns(mysqlPool) // aiomysql keeps every released connection
	})
	return s.sql, s.sqlErr
}

// shipping is a product's options in their order (DECIMAL prices read back as floats).
func (s *dbStores) shipping(id int64) ([]ShippingOption, error) {
	db, err := s.pool()
	if err != nil {
		return nil, err
	}
	// no arguments: the text protocol, one round trip, as aiomysql's cursor.execute
	rows, err := db.QueryContext(context.Background(), fmt.Sprintf(shippingSelect, id))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ShippingOption{}
	for rows.Next() {
		var o ShippingOption
		var price float64
		if err := rows.Scan(&o.Carrier, &o.Method, &price, &o.MinDays, &o.MaxDays); err != nil {
			return nil, err
		}
		o.Price = Float(price)
		out = append(out, o)
	}
	return out, rows.Err()
}
