package ipclab.payload;

import com.google.protobuf.Message;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import se.espressoshock.models.protoc.Address;
import se.espressoshock.models.protoc.Item;
import se.espressoshock.models.protoc.Payment;
import se.espressoshock.models.protoc.Payments;
import se.espressoshock.models.protoc.Transaction;
import se.espressoshock.protos.User;
import se.espressoshock.protos.Users;

/**
 * {@code count} records of one structure, each form (the JSON classes or the protobuf
 * message) built on first use and then kept, so a process that serves one format holds
 * only that format's objects, as {@code data.Dataset} in Python; the last 16 datasets asked
 * for are kept ({@code functools.lru_cache(maxsize=16)} there).
 */
final class Dataset {
    static final int MAX_COUNT = 300_000;
    private static final int KEPT = 16;
    private static final Map<String, Dataset> CACHE = new LinkedHashMap<>(KEPT, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Dataset> eldest) {
            return size() > KEPT;
        }
    };

    final String structure;
    final int count;
    final int seed;
    private Object document;
    private Message message;

    private Dataset(String structure, int count, int seed) {
        this.structure = structure;
        this.count = count;
        this.seed = seed;
    }

    static Dataset of(String structure, int count, int seed) {
        synchronized (CACHE) {
            return CACHE.computeIfAbsent(structure + ":" + count + ":" + seed,
                    k -> new Dataset(structure, count, seed));
        }
    }

    /** The JSON form: {@link Model.Users} or {@link Model.Payments}. */
    synchronized Object document() {
        if (document == null) {
            if (structure.equals("flat")) {
                Model.Users users = new Model.Users();
                users.users = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    users.users.add(Records.user(seed, i));
                }
                document = users;
            } else {
                Model.Payments payments = new Model.Payments();
                payments.payments = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    payments.payments.add(Records.payment(seed, i));
                }
                document = payments;
            }
        }
        return document;
    }

    /** The protobuf form, built record by record (from the JSON form only if it is built). */
    synchronized Message message() {
        if (message == null) {
            message = structure.equals("flat") ? users() : payments();
        }
        return message;
    }

    private Users users() {
        Users.Builder out = Users.newBuilder();
        List<Model.User> built = document != null ? ((Model.Users) document).users : null;
        for (int i = 0; i < count; i++) {
            Model.User u = built != null ? built.get(i) : Records.user(seed, i);
            out.addUsers(User.newBuilder().setUid(u.uid).setEmail(u.email)
                    .setUsername(u.username).setProfilePictureURL(u.profilePictureURL)
                    .setAge(u.age));
        }
        return out.build();
    }

    private Payments payments() {
        Payments.Builder out = Payments.newBuilder();
        List<Model.Payment> built =
                document != null ? ((Model.Payments) document).payments : null;
        for (int i = 0; i < count; i++) {
            out.addPayments(toMessage(built != null ? built.get(i) : Records.payment(seed, i)));
        }
        return out.build();
    }

    static Payment toMessage(Model.Payment p) {
        Payment.Builder b = Payment.newBuilder().setId(p.id).setCreateTime(p.createTime)
                .setUpdateTime(p.updateTime)
                .setPaymentState(Payment.PaymentState.valueOf(p.paymentState))
                .setPayer(p.payer);
        for (Model.Transaction t : p.transactions) {
            Transaction.Builder tb = Transaction.newBuilder().setDescription(t.description)
                    .setSubtotal(t.subtotal).setTax(t.tax).setShipping(t.shipping);
            for (Model.Item i : t.items) {
                tb.addItems(Item.newBuilder().setName(i.name).setSku(i.sku).setPrice(i.price)
                        .setCurrency(i.currency).setQuantity(i.quantity));
            }
            Model.Address a = t.shippingAddress;
            tb.setShippingAddress(Address.newBuilder().setRecipientName(a.recipientName)
                    .setLine1(a.line1).setLine2(a.line2).setState(a.state).setPhone(a.phone)
                    .setPostalCode(a.postalCode).setCountryCode(a.countryCode));
            b.addTransactions(tb);
        }
        return b.build();
    }
}
