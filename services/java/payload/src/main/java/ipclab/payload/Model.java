package ipclab.payload;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;

/**
 * The JSON form of the payloads: plain classes that Jackson writes field by field, in the
 * order of the proto definitions (Figs. 20 and 48), keys the proto field names, as the
 * Python services' documents ({@code services/domains/payload/data.py}).
 */
final class Model {
    private Model() {
    }

    @JsonPropertyOrder({"uid", "email", "username", "profilePictureURL", "age"})
    public static final class User {
        public String uid;
        public String email;
        public String username;
        public String profilePictureURL;
        public int age;
    }

    public static final class Users {
        public List<User> users;
    }

    @JsonPropertyOrder({"name", "sku", "price", "currency", "quantity"})
    public static final class Item {
        public String name;
        public String sku;
        public double price;
        public String currency;
        public int quantity;
    }

    @JsonPropertyOrder({"recipientName", "line1", "line2", "state", "phone", "postalCode",
        "countryCode"})
    public static final class Address {
        public String recipientName;
        public String line1;
        public String line2;
        public String state;
        public String phone;
        public String postalCode;
        public String countryCode;
    }

    @JsonPropertyOrder({"description", "items", "shippingAddress", "subtotal", "tax", "shipping"})
    public static final class Transaction {
        public String description;
        public List<Item> items;
        public Address shippingAddress;
        public double subtotal;
        public double tax;
        public double shipping;
    }

    @JsonPropertyOrder({"id", "createTime", "updateTime", "paymentState", "payer", "transactions"})
    public static final class Payment {
        public String id;
        public String createTime;
        public String updateTime;
        public String paymentState;
        public String payer;
        public List<Transaction> transactions;
    }

    public static final class Payments {
        public List<Payment> payments;
    }
}
