package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Float encodes like Python's orjson: the shortest representation, with ".0" when whole,
// so a Go gateway's bytes equal a Python gateway's.
type Float float64

// MarshalJSON writes the shortest decimal that round-trips, keeping a ".0" on whole values.
func (f Float) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// Product is one catalogue entry (fields in the order of shop.proto and data.py).
type Product struct {
	ProductID   int64  `json:"product_id" bson:"product_id"`
	Name        string `json:"name" bson:"name"`
	Price       Float  `json:"price" bson:"price"`
	Description string `json:"description" bson:"description"`
	Color       string `json:"color" bson:"color"`
	ImageURL    string `json:"image_url" bson:"image_url"`
}

// Review is one review of a product.
type Review struct {
	ReviewID   int64  `json:"review_id" bson:"review_id"`
	CustomerID int64  `json:"customer_id" bson:"customer_id"`
	Rating     int32  `json:"rating" bson:"rating"`
	Title      string `json:"title" bson:"title"`
	Body       string `json:"body" bson:"body"`
}

// Recommendation is another product shown beside one.
type Recommendation struct {
	ProductID int64  `json:"product_id" bson:"product_id"`
	Name      string `json:"name" bson:"name"`
	Price     Float  `json:"price" bson:"price"`
}

// ShippingOption is one way to ship a product.
type ShippingOption struct {
	Carrier string `json:"carrier" bson:"carrier"`
	Method  string `json:"method" bson:"method"`
	Price   Float  `json:"price" bson:"price"`
	MinDays int32  `json:"min_days" bson:"min_days"`
	MaxDays int32  `json:"max_days" bson:"max_days"`
}

// CartItem is one line of a cart.
type CartItem struct {
	ProductID int64  `json:"product_id" bson:"product_id"`
	Name      string `json:"name" bson:"name"`
	Quantity  int32  `json:"quantity" bson:"quantity"`
	UnitPrice Float  `json:"unit_price" bson:"unit_price"`
}

// Cart is a customer's cart.
type Cart struct {
	CustomerID int64      `json:"customer_id" bson:"customer_id"`
	Items      []CartItem `json:"items" bson:"items"`
	Total      Float      `json:"total" bson:"total"`
}

// Fixture is every record, as ipclab_services.domains.shop.write_fixture writes it.
type Fixture struct {
	Seed            int64              `json:"seed" bson:"seed"`
	CatalogueSize   int64              `json:"catalogue_size" bson:"catalogue_size"`
	Customers       int64              `json:"customers" bson:"customers"`
	Products        []Product          `json:"products" bson:"products"`
	Reviews         [][]Review         `json:"reviews" bson:"reviews"`
	Recommendations [][]Recommendation `json:"recommendations" bson:"recommendations"`
	Shipping        [][]ShippingOption `json:"shipping" bson:"shipping"`
	Carts           []Cart             `json:"carts" bson:"carts"`
	// the stores the records are read from with IPCLAB_STORE=db (stores.go), else nil
	db *dbStores
}

func loadFixture(path string, seed, catalogue, customers int64) (*Fixture, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the shop fixture (IPCLAB_FIXTURE): %w", err)
	}
	var f Fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("the shop fixture %s: %w", path, err)
	}
	if f.Seed != seed || f.CatalogueSize != catalogue || f.Customers != customers {
		return nil, fmt.Errorf("the shop fixture %s is for seed %d, %d products, %d customers; the environment asks for %d, %d, %d",
			path, f.Seed, f.CatalogueSize, f.Customers, seed, catalogue, customers)
	}
	for i := range f.Reviews {
		if f.Reviews[i] == nil {
			f.Reviews[i] = []Review{}
		}
	}
	for i := range f.Carts {
		if f.Carts[i].Items == nil {
			f.Carts[i].Items = []CartItem{}
		}
	}
	return &f, nil
}

func (f *Fixture) productID(id int64) (int, error) {
	if id < 0 {
		return 0, badRequest("product_id must not be negative")
	}
	if id < 1 || id > f.CatalogueSize {
		return 0, notFound(fmt.Sprintf("no product %d", id))
	}
	return int(id - 1), nil
}

// The five services' answers, as Go values (ProductInfo answers a *Product).

func (f *Fixture) product(id int64) (*Product, error) {
	i, err := f.productID(id)
	if err != nil {
		return nil, err
	}
	if f.db != nil {
		return f.db.product(id)
	}
	return &f.Products[i], nil
}

func (f *Fixture) reviews(id int64) ([]Review, error) {
	i, err := f.productID(id)
	if err != nil {
		return nil, err
	}
	if f.db != nil {
		return f.db.reviews(id)
	}
	return f.Reviews[i], nil
}

func (f *Fixture) recommendations(id int64) ([]Recommendation, error) {
	i, err := f.productID(id)
	if err != nil {
		return nil, err
	}
	if f.db != nil {
		return f.db.recommendations(id)
	}
	return f.Recommendations[i], nil
}

func (f *Fixture) shipping(id int64) ([]ShippingOption, error) {
	i, err := f.productID(id)
	if err != nil {
		return nil, err
	}
	if f.db != nil {
		return f.db.shipping(id)
	}
	return f.Shipping[i], nil
}

// cart is nil for customer 0 (no customer); an unknown customer has an empty cart.
func (f *Fixture) cart(id int64) (*Cart, error) {
	switch {
	case id < 0:
		return nil, badRequest("customer_id must not be negative")
	case id == 0:
		return nil, nil
	case f.db != nil:
		return f.db.cart(id)
	case id <= f.Customers:
		return &f.Carts[id-1], nil
	}
	return &Cart{CustomerID: id, Items: []CartItem{}, Total: 0}, nil
}

// Service answers as the JSON documents REST and AMQP carry, keyed like data.py's services.

type reviewsDoc struct {
	Reviews []Review `json:"reviews" bson:"reviews"`
}
type recommendationsDoc struct {
	Recommendations []Recommendation `json:"recommendations" bson:"recommendations"`
}
type shippingDoc struct {
	Options []ShippingOption `json:"options" bson:"options"`
}
type cartDoc struct {
	Cart *Cart `json:"cart" bson:"cart"`
}

// serviceKey is the request field each service reads.
func serviceKey(service string) string {
	if service == "cart" {
		return "customer_id"
	}
	return "product_id"
}

// answer is a service's "get" answer for one id, as a document.
func (f *Fixture) answer(service string, id int64) (any, error) {
	switch service {
	case "product-info":
		return f.product(id)
	case "reviews":
		r, err := f.reviews(id)
		return reviewsDoc{r}, err
	case "recommendations":
		r, err := f.recommendations(id)
		return recommendationsDoc{r}, err
	case "shipping":
		r, err := f.shipping(id)
		return shippingDoc{r}, err
	case "cart":
		c, err := f.cart(id)
		return cartDoc{c}, err
	}
	return nil, &ServiceError{Code: "internal", Message: "unknown service " + service}
}
