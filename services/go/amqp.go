package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// AMQP 0-9-1 through RabbitMQ, the topology of transports/amqp.py: one queue per service
// ("ipclab.<service>", non-durable, not exclusive, not auto-delete) declared by both sides;
// requests through the default exchange, transient, mandatory; services consume with manual
// acks and prefetch 64, publish the reply to reply_to with the same correlation id, then
// ack; the gateway has one connection, one channel and one exclusive server-named reply
// queue consumed without acks. Body {"op", "request"}; reply {"result"} or {"error", "message"}.
//
// Reconnection as aio-pika's connect_robust (the Python stack's): the first connection
// must succeed (a broker that does not answer at start is an error); a connection lost
// later is dialled again at once, then every reconnectInterval until it succeeds, and the
// channel, its QoS, the queues, the reply queue and the consumers are declared again. While
// the gateway has no connection a call is "unavailable" at once; a call whose reply was lost
// with the old connection waits for its deadline ("timeout"), as in Python.

const prefetch = 64

// aio-pika's RobustConnection default (reconnect_interval=5)
const reconnectInterval = 5 * time.Second

func queueName(service string) string { return "ipclab." + service }

func declare(ch *amqp.Channel, service string) error {
	_, err := ch.QueueDeclare(queueName(service), false, false, false, false, nil)
	return err
}

type amqpRequest struct {
	Op      string         `json:"op"`
	Request map[string]any `json:"request"`
}

// robust keeps one connection to amqpURL: setup runs on every new connection (the first one
// must succeed); when a connection closes, it is dialled again at once and then every
// reconnectInterval, until stop is closed.
func robust(amqpURL, who string, setup func(*amqp.Connection) error, stop <-chan struct{},
	lost func()) error {
	connect := func() (*amqp.Connection, error) {
		dial := func() (*amqp.Connection, error) { return amqp.Dial(amqpURL) }
		if clientTLSOn() { // AMQPS: the harness gives an amqps:// URL
			dial = func() (*amqp.Connection, error) { return amqp.DialTLS(amqpURL, clientTLS()) }
		}
		conn, err := dial()
		if err != nil {
			return nil, err
		}
		if err := setup(conn); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return conn, nil
	}
	conn, err := connect()
	if err != nil {
		return err
	}
	go func() {
		for {
			closed := conn.NotifyClose(make(chan *amqp.Error, 1))
			select {
			case <-stop:
				_ = conn.Close()
				return
			case e := <-closed:
				lost()
				log.Printf("amqp %s: connection closed (%v); reconnecting", who, e)
			}
			for {
				c, err := connect()
				if err == nil {
					conn = c
					log.Printf("amqp %s: reconnected", who)
					break
				}
				log.Printf("amqp %s: reconnect failed (%v); again in %s", who, err, reconnectInterval)
				select {
				case <-stop:
					return
				case <-time.After(reconnectInterval):
				}
			}
		}
	}()
	return nil
}

func serveAMQP(f *Fixture, service, amqpURL string) error {
	setup := func(conn *amqp.Connection) error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		if err := ch.Qos(prefetch, 0, false); err != nil {
			return err
		}
		if err := declare(ch, service); err != nil {
			return err
		}
		deliveries, err := ch.Consume(queueName(service), "", false, false, false, false, nil)
		if err != nil {
			return err
		}
		go func() {
			for d := range deliveries {
				go func(d amqp.Delivery) {
					reply := handleAMQP(f, service, d.Body)
					if d.ReplyTo != "" {
						_ = ch.PublishWithContext(context.Background(), "", d.ReplyTo, false, false,
							amqp.Publishing{Body: reply, CorrelationId: d.CorrelationId,
								DeliveryMode: amqp.Transient})
					}
					_ = d.Ack(false)
				}(d)
			}
		}()
		return nil
	}
	if err := robust(amqpURL, service, setup, nil, func() {}); err != nil {
		return err
	}
	select {} // serves until the process is stopped
}

func handleAMQP(f *Fixture, service string, body []byte) []byte {
	var req amqpRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return encode(map[string]string{"error": "internal", "message": err.Error()})
	}
	values := url.Values{}
	for k, v := range req.Request {
		switch x := v.(type) {
		case float64:
			values.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
		case string:
			values.Set(k, x)
		default:
			values.Set(k, fmt.Sprint(x))
		}
	}
	doc, err := invoke(f, service, req.Op, values)
	if err != nil {
		se := asServiceError(err)
		return encode(map[string]string{"error": se.Code, "message": se.Message})
	}
	return encode(map[string]any{"result": doc})
}

type amqpReply struct {
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

// amqpSession is what one connection gives the gateway: its channel and reply queue.
type amqpSession struct {
	ch     *amqp.Channel
	replyQ string
}

type amqpClients struct {
	smu     sync.RWMutex
	session *amqpSession // nil while reconnecting
	stop    chan struct{}
	prefix  string
	mu      sync.Mutex
	next    uint64
	pending map[string]chan amqpReply
	stats   struct {
		Published     int            `json:"published"`
		Replies       int            `json:"replies"`
		Unmatched     int            `json:"unmatched"`
		Returned      int            `json:"returned"`
		Pending       int            `json:"pending"`
		PublishedByOp map[string]int `json:"published_by_op"`
	}
}

func newAMQPClients(services []string, amqpURL string) (*amqpClients, error) {
	c := &amqpClients{prefix: fmt.Sprintf("%d-", os.Getpid()), stop: make(chan struct{}),
		pending: map[string]chan amqpReply{}}
	c.stats.PublishedByOp = map[string]int{}
	setup := func(conn *amqp.Connection) error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		for _, s := range services {
			if err := declare(ch, s); err != nil {
				return err
			}
		}
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return err
		}
		replies, err := ch.Consume(q.Name, "", true, true, false, false, nil)
		if err != nil {
			return err
		}
		returns := ch.NotifyReturn(make(chan amqp.Return, 16))
		go func() {
			for d := range replies {
				var r amqpReply
				if json.Unmarshal(d.Body, &r) != nil {
					r = amqpReply{Error: "internal", Message: "a non-JSON reply"}
				}
				c.deliver(d.CorrelationId, r, false)
			}
		}()
		go func() {
			for r := range returns {
				c.deliver(r.CorrelationId,
					amqpReply{Error: "unavailable", Message: "no queue for the request"}, true)
			}
		}()
		c.smu.Lock()
		c.session = &amqpSession{ch, q.Name}
		c.smu.Unlock()
		return nil
	}
	lost := func() {
		c.smu.Lock()
		c.session = nil
		c.smu.Unlock()
	}
	if err := robust(amqpURL, "gateway", setup, c.stop, lost); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *amqpClients) deliver(cid string, r amqpReply, returned bool) {
	c.mu.Lock()
	if returned {
		c.stats.Returned++
	} else {
		c.stats.Replies++
	}
	ch, ok := c.pending[cid]
	delete(c.pending, cid)
	if !ok && !returned {
		c.stats.Unmatched++
	}
	c.mu.Unlock()
	if ok {
		ch <- r // buffered: never blocks
	}
}

var errReconnecting = errors.New("the connection is lost, reconnecting")

func (c *amqpClients) Call(ctx context.Context, service, op string, id int64, out any) error {
	request := map[string]int64{}
	if op == "get" {
		request[serviceKey(service)] = id
	}
	body := encode(map[string]any{"op": op, "request": request})
	done := make(chan amqpReply, 1)
	c.mu.Lock()
	cid := c.prefix + strconv.FormatUint(c.next, 10)
	c.next++
	c.pending[cid] = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, cid)
		c.mu.Unlock()
	}()
	c.smu.RLock()
	s := c.session
	c.smu.RUnlock()
	err := errReconnecting
	if s != nil {
		err = s.ch.PublishWithContext(ctx, "", queueName(service), true, false, amqp.Publishing{
			Body: body, CorrelationId: cid, ReplyTo: s.replyQ, DeliveryMode: amqp.Transient,
		})
	}
	if err != nil {
		return unavailable(fmt.Sprintf("broker: %v", err))
	}
	c.mu.Lock()
	c.stats.Published++
	c.stats.PublishedByOp[op]++
	c.mu.Unlock()
	select {
	case r := <-done:
		if r.Error != "" {
			return fromCode(r.Error, r.Message)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return &ServiceError{"internal", fmt.Sprintf("%s: a bad reply: %v", service, err)}
			}
		}
		return nil
	case <-ctx.Done():
		return timeout(service + " did not answer within the deadline")
	}
}

func (c *amqpClients) Stats() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Pending = len(c.pending)
	byOp := map[string]int{}
	for k, v := range c.stats.PublishedByOp {
		byOp[k] = v
	}
	s.PublishedByOp = byOp
	return s
}

func (c *amqpClients) Close() { close(c.stop) }
