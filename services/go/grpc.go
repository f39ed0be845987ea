package main

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pb "ipclab/services/go/shoppb"
)

// gRPC: unary calls from services/proto/shop.proto; errors travel as status codes
// (NOT_FOUND, INVALID_ARGUMENT; UNAVAILABLE and DEADLINE_EXCEEDED become 503 and 504).

var toStatus = map[string]codes.Code{
	"not_found":   codes.NotFound,
	"bad_request": codes.InvalidArgument,
	"unavailable": codes.Unavailable,
	"timeout":     codes.DeadlineExceeded,
}

func grpcError(err error) error {
	se := asServiceError(err)
	code, ok := toStatus[se.Code]
	if !ok {
		code = codes.Internal
	}
	return status.Error(code, se.Message)
}

func pbProduct(p *Product) *pb.Product {
	return &pb.Product{ProductId: p.ProductID, Name: p.Name, Price: float64(p.Price),
		Description: p.Description, Color: p.Color, ImageUrl: p.ImageURL}
}

type grpcServices struct {
	f *Fixture
	pb.UnimplementedProductInfoServer
}

func (s *grpcServices) Ping(context.Context, *pb.Empty) (*pb.Empty, error) { return &pb.Empty{}, nil }

type infoServer struct{ *grpcServices }

func (s infoServer) Get(_ context.Context, r *pb.ProductRequest) (*pb.Product, error) {
	p, err := s.f.product(r.ProductId)
	if err != nil {
		return nil, grpcError(err)
	}
	return pbProduct(p), nil
}

type reviewsServer struct {
	*grpcServices
	pb.UnimplementedProductReviewsServer
}

func (s reviewsServer) Ping(ctx context.Context, e *pb.Empty) (*pb.Empty, error) {
	return s.grpcServices.Ping(ctx, e)
}

func (s reviewsServer) Get(_ context.Context, r *pb.ProductRequest) (*pb.Reviews, error) {
	rs, err := s.f.reviews(r.ProductId)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &pb.Reviews{Reviews: make([]*pb.Review, len(rs))}
	for i, v := range rs {
		out.Reviews[i] = &pb.Review{ReviewId: v.ReviewID, CustomerId: v.CustomerID, Rating: v.Rating, Title: v.Title, Body: v.Body}
	}
	return out, nil
}

type recsServer struct {
	*grpcServices
	pb.UnimplementedProductRecommendationsServer
}

func (s recsServer) Ping(ctx context.Context, e *pb.Empty) (*pb.Empty, error) {
	return s.grpcServices.Ping(ctx, e)
}

func (s recsServer) Get(_ context.Context, r *pb.ProductRequest) (*pb.Recommendations, error) {
	rs, err := s.f.recommendations(r.ProductId)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &pb.Recommendations{Recommendations: make([]*pb.Recommendation, len(rs))}
	for i, v := range rs {
		out.Recommendations[i] = &pb.Recommendation{ProductId: v.ProductID, Name: v.Name, Price: float64(v.Price)}
	}
	return out, nil
}

type shippingServer struct {
	*grpcServices
	pb.UnimplementedProductShippingServer
}

func (s shippingServer) Ping(ctx context.Context, e *pb.Empty) (*pb.Empty, error) {
	return s.grpcServices.Ping(ctx, e)
}

func (s shippingServer) Get(_ context.Context, r *pb.ProductRequest) (*pb.Shipping, error) {
	rs, err := s.f.shipping(r.ProductId)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &pb.Shipping{Options: make([]*pb.ShippingOption, len(rs))}
	for i, v := range rs {
		out.Options[i] = &pb.ShippingOption{Carrier: v.Carrier, Method: v.Method, Price: float64(v.Price), MinDays: v.MinDays, MaxDays: v.MaxDays}
	}
	return out, nil
}

type cartServer struct {
	*grpcServices
	pb.UnimplementedShoppingCartServer
}

func (s cartServer) Ping(ctx context.Context, e *pb.Empty) (*pb.Empty, error) {
	return s.grpcServices.Ping(ctx, e)
}

func (s cartServer) Get(_ context.Context, r *pb.CustomerRequest) (*pb.CartReply, error) {
	c, err := s.f.cart(r.CustomerId)
	if err != nil {
		return nil, grpcError(err)
	}
	if c == nil {
		return &pb.CartReply{}, nil
	}
	out := &pb.Cart{CustomerId: c.CustomerID, Total: float64(c.Total), Items: make([]*pb.CartItem, len(c.Items))}
	for i, v := range c.Items {
		out.Items[i] = &pb.CartItem{ProductId: v.ProductID, Name: v.Name, Quantity: v.Quantity, UnitPrice: float64(v.UnitPrice)}
	}
	return &pb.CartReply{Cart: out}, nil
}

func serveGRPC(f *Fixture, service, addr string) error {
	base := &grpcServices{f: f}
	var options []grpc.ServerOption
	if tlsOn() {
		options = append(options, grpc.Creds(credentials.NewTLS(serverTLS())))
	}
	server := grpc.NewServer(options...)
	switch service {
	case "product-info":
		pb.RegisterProductInfoServer(server, infoServer{base})
	case "reviews":
		pb.RegisterProductReviewsServer(server, reviewsServer{grpcServices: base})
	case "recommendations":
		pb.RegisterProductRecommendationsServer(server, recsServer{grpcServices: base})
	case "shipping":
		pb.RegisterProductShippingServer(server, shippingServer{grpcServices: base})
	case "cart":
		pb.RegisterShoppingCartServer(server, cartServer{grpcServices: base})
	default:
		return fmt.Errorf("unknown service %q", service)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return server.Serve(lis)
}

// grpcClients opens one channel (ClientConn) per service at start and keeps it.
type grpcClients struct {
	conns map[string]*grpc.ClientConn
	info  pb.ProductInfoClient
	revs  pb.ProductReviewsClient
	recs  pb.ProductRecommendationsClient
	ship  pb.ProductShippingClient
	cart  pb.ShoppingCartClient
}

func newGRPCClients(addresses map[string]string) (*grpcClients, error) {
	c := &grpcClients{conns: map[string]*grpc.ClientConn{}}
	creds := insecure.NewCredentials()
	if clientTLSOn() { // one connection, so one handshake, per service
		creds = credentials.NewTLS(clientTLS())
	}
	for s, a := range addresses {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, err
		}
		c.conns[s] = conn
	}
	c.info = pb.NewProductInfoClient(c.conns["product-info"])
	c.revs = pb.NewProductReviewsClient(c.conns["reviews"])
	c.recs = pb.NewProductRecommendationsClient(c.conns["recommendations"])
	c.ship = pb.NewProductShippingClient(c.conns["shipping"])
	c.cart = pb.NewShoppingCartClient(c.conns["cart"])
	return c, nil
}

func fromGRPC(service string, err error) error {
	st := status.Convert(err)
	msg := service + ": " + st.Message()
	switch st.Code() {
	case codes.NotFound:
		return notFound(msg)
	case codes.InvalidArgument:
		return badRequest(msg)
	case codes.Unavailable:
		return unavailable(msg)
	case codes.DeadlineExceeded:
		return timeout(msg)
	}
	return &ServiceError{"internal", msg}
}

func (c *grpcClients) Call(ctx context.Context, service, op string, id int64, out any) error {
	pr := &pb.ProductRequest{ProductId: id}
	var err error
	if op == "ping" {
		e := &pb.Empty{}
		switch service {
		case "product-info":
			_, err = c.info.Ping(ctx, e)
		case "reviews":
			_, err = c.revs.Ping(ctx, e)
		case "recommendations":
			_, err = c.recs.Ping(ctx, e)
		case "shipping":
			_, err = c.ship.Ping(ctx, e)
		case "cart":
			_, err = c.cart.Ping(ctx, e)
		}
	} else {
		err = c.get(ctx, service, pr, id, out)
	}
	if err != nil {
		return fromGRPC(service, err)
	}
	return nil
}

// get calls a service's Get and converts the message into out.
func (c *grpcClients) get(ctx context.Context, service string, pr *pb.ProductRequest, id int64, out any) error {
	switch service {
	case "product-info":
		r, err := c.info.Get(ctx, pr)
		if err == nil {
			*out.(*Product) = Product{r.ProductId, r.Name, Float(r.Price), r.Description, r.Color, r.ImageUrl}
		}
		return err
	case "reviews":
		r, err := c.revs.Get(ctx, pr)
		if err == nil {
			rs := make([]Review, len(r.Reviews))
			for i, v := range r.Reviews {
				rs[i] = Review{v.ReviewId, v.CustomerId, v.Rating, v.Title, v.Body}
			}
			out.(*reviewsDoc).Reviews = rs
		}
		return err
	case "recommendations":
		r, err := c.recs.Get(ctx, pr)
		if err == nil {
			rs := make([]Recommendation, len(r.Recommendations))
			for i, v := range r.Recommendations {
				rs[i] = Recommendation{v.ProductId, v.Name, Float(v.Price)}
			}
			out.(*recommendationsDoc).Recommendations = rs
		}
		return err
	case "shipping":
		r, err := c.ship.Get(ctx, pr)
		if err == nil {
			rs := make([]ShippingOption, len(r.Options))
			for i, v := range r.Options {
				rs[i] = ShippingOption{v.Carrier, v.Method, Float(v.Price), v.MinDays, v.MaxDays}
			}
			out.(*shippingDoc).Options = rs
		}
		return err
	case "cart":
		r, err := c.cart.Get(ctx, &pb.CustomerRequest{CustomerId: id})
		if err == nil && r.Cart != nil {
			items := make([]CartItem, len(r.Cart.Items))
			for i, v := range r.Cart.Items {
				items[i] = CartItem{v.ProductId, v.Name, v.Quantity, Float(v.UnitPrice)}
			}
			out.(*cartDoc).Cart = &Cart{r.Cart.CustomerId, items, Float(r.Cart.Total)}
		}
		return err
	}
	return fmt.Errorf("unknown service %q", service)
}

func (c *grpcClients) Stats() any { return struct{}{} }
func (c *grpcClients) Close() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}
