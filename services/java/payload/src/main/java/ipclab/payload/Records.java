package ipclab.payload;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The seeded records of {@code services/domains/payload/data.py}, drawn in the same order
 * from the same generator ({@link PyRandom}, seeded with {@code "<seed>:<structure>:<index>"}),
 * so element {@code index} is the Python generator's element {@code index}, value for
 * value. Python's {@code round(x, 2)} rounds the double's exact value half to even, as
 * {@code BigDecimal} does here.
 */
final class Records {
    static final int TRANSACTIONS_PER_PAYMENT = 2;
    static final int ITEMS_PER_TRANSACTION = 3;
    static final double TAX_RATE = 0.08;

    private static final List<String> FIRST = List.of(
            "coleman", "vidal", "maria", "ahmed", "sofia", "lars", "yuki", "amara", "piotr",
            "elena", "jonas", "fatima", "diego", "hannah", "kwame", "ingrid", "mateo", "aisha",
            "oskar", "lena");
    private static final List<String> LAST = List.of(
            "balistreri", "hammes", "eriksson", "okafor", "rossi", "nakamura", "kowalski",
            "garcia", "lindqvist", "haddad", "schmidt", "moreau", "andersen", "petersen",
            "novak", "silva");
    private static final List<String> PROVIDERS = List.of(
            "yahoo.com", "gmail.com", "hotmail.com", "outlook.com", "proton.me");
    private static final List<String> ADJECTIVES = List.of(
            "Small", "Rustic", "Ergonomic", "Sleek", "Durable", "Gorgeous", "Practical");
    private static final List<String> MATERIALS = List.of(
            "Rubber", "Copper", "Steel", "Wooden", "Cotton", "Granite", "Plastic", "Wool");
    private static final List<String> PRODUCTS = List.of(
            "Watch", "Knife", "Chair", "Lamp", "Shirt", "Bottle", "Keyboard", "Table", "Hat");
    private static final List<String> CURRENCIES = List.of(
            "USD", "EUR", "SEK", "GBP", "RUB", "JPY", "CHF", "NOK");
    private static final List<String> STREETS = List.of(
            "Maple", "Oak", "Cedar", "Elm", "Birch", "Lake", "Hill", "Park");
    private static final List<String> STREET_KINDS = List.of(
            "Street", "Avenue", "Road", "Lane", "Boulevard");
    private static final List<String> STATES = List.of(
            "CA", "NY", "TX", "WA", "FL", "IL", "OR", "MA");
    private static final List<String> COUNTRIES = List.of(
            "US", "SE", "IT", "DE", "GB", "FR", "NO", "PL");
    private static final String ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    private Records() {
    }

    private static PyRandom rng(int seed, String structure, int index) {
        return new PyRandom(seed + ":" + structure + ":" + index);
    }

    /** Python's {@code round(x, 2)}. */
    static double round2(double x) {
        return new BigDecimal(x).setScale(2, RoundingMode.HALF_EVEN).doubleValue();
    }

    /** {@code str(uuid.UUID(int=getrandbits(128), version=4))}. */
    static String uuid4(PyRandom rng) {
        long[] bits = rng.getrandbits128();
        long low = (bits[0] & ~(0xc000L << 48)) | (0x8000L << 48);
        long high = (bits[1] & ~0xf000L) | (4L << 12);
        String hex = String.format(Locale.ROOT, "%016x%016x", high, low);
        return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16)
                + "-" + hex.substring(16, 20) + "-" + hex.substring(20);
    }

    private static String title(String word) {
        return Character.toUpperCase(word.charAt(0)) + word.substring(1);
    }

    static Model.User user(int seed, int index) {
        PyRandom rng = rng(seed, "flat", index);
        String first = rng.choice(FIRST);
        String last = rng.choice(LAST);
        String handle = first + last + rng.randbelow(100);
        Model.User u = new Model.User();
        u.uid = uuid4(rng);
        u.email = first + "." + last + "@" + rng.choice(PROVIDERS);
        u.username = first + "." + last;
        u.profilePictureURL = "https://s3.amazonaws.com/uifaces/faces/twitter/" + handle
                + "/128.jpg";
        u.age = (int) rng.randint(18, 80);
        return u;
    }

    private static Model.Item item(PyRandom rng) {
        Model.Item i = new Model.Item();
        i.name = rng.choice(ADJECTIVES) + " " + rng.choice(MATERIALS) + " "
                + rng.choice(PRODUCTS);
        i.sku = uuid4(rng);
        i.price = round2(rng.uniform(1.0, 100.0));
        i.currency = rng.choice(CURRENCIES);
        i.quantity = (int) rng.randint(1, 20);
        return i;
    }

    private static Model.Address address(PyRandom rng) {
        String first = rng.choice(FIRST);
        String last = rng.choice(LAST);
        Model.Address a = new Model.Address();
        a.recipientName = title(first) + " " + title(last);
        a.line1 = rng.randint(1, 9999) + " " + rng.choice(STREETS) + " "
                + rng.choice(STREET_KINDS);
        a.line2 = "Apt. " + rng.randint(1, 999);
        a.state = rng.choice(STATES);
        long p1 = rng.randint(200, 999);
        long p2 = rng.randint(200, 999);
        long p3 = rng.randint(0, 9999);
        a.phone = String.format(Locale.ROOT, "+1-%d-%d-%04d", p1, p2, p3);
        a.postalCode = Long.toString(rng.randint(10000, 99999));
        a.countryCode = rng.choice(COUNTRIES);
        return a;
    }

    private static Model.Transaction transaction(PyRandom rng) {
        List<Model.Item> items = new ArrayList<>(ITEMS_PER_TRANSACTION);
        for (int k = 0; k < ITEMS_PER_TRANSACTION; k++) {
            items.add(item(rng));
        }
        double sum = 0; // Python's sum(): the products added in order, no compensation
        for (Model.Item i : items) {
            sum += i.price * i.quantity;
        }
        Model.Transaction t = new Model.Transaction();
        t.description = "Order " + rng.randint(100000, 999999) + " of " + items.size()
                + " items";
        t.items = items;
        t.shippingAddress = address(rng);
        t.subtotal = round2(sum);
        t.tax = round2(t.subtotal * TAX_RATE);
        t.shipping = round2(rng.uniform(0.0, 25.0));
        return t;
    }

    /** {@code _timestamp}: {seconds, ISO 8601 text}. */
    private static Object[] timestamp(PyRandom rng, long start) {
        long t = start + rng.randrange(0, 3 * 86_400);
        long days = t / 86_400;
        long rest = t % 86_400;
        long month = (days % 336) / 28;
        long day = (days % 336) % 28;
        long hh = rest / 3600;
        long mm = (rest % 3600) / 60;
        long ss = rest % 60;
        String text = String.format(Locale.ROOT, "2021-%02d-%02dT%02d:%02d:%02dZ", month + 1,
                day + 1, hh, mm, ss);
        return new Object[] {t, text};
    }

    static Model.Payment payment(int seed, int index) {
        PyRandom rng = rng(seed, "nested", index);
        Object[] created = timestamp(rng, rng.randrange(0, 300 * 86_400));
        Object[] updated = timestamp(rng, (Long) created[0]);
        String first = rng.choice(FIRST);
        String last = rng.choice(LAST);
        Model.Payment p = new Model.Payment();
        p.id = "PAY-" + rng.choices(ALNUM, 24);
        p.createTime = (String) created[1];
        p.updateTime = (String) updated[1];
        p.paymentState = rng.random() < 0.9 ? "APPROVED" : "DECLINED";
        p.payer = first + "." + last + "@" + rng.choice(PROVIDERS);
        p.transactions = new ArrayList<>(TRANSACTIONS_PER_PAYMENT);
        for (int k = 0; k < TRANSACTIONS_PER_PAYMENT; k++) {
            p.transactions.add(transaction(rng));
        }
        return p;
    }
}
