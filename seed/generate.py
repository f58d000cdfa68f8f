"""A deterministic retail-and-payments raw layer, anchored to an injected ``now``.

Every number comes from one seeded numpy Generator on a fixed calendar, and every
timestamp is then moved by whole days to end on ``now``'s UTC day. So the same
``(seed, scale)`` loads the same rows on any day, shifted by whole days (hours of
the day, and so every model's data and metrics, are identical), and a test run at
any hour sees the estate the tests were written against. The signals are planted
on purpose, because three demo models must learn something real from them:

* demand has a weekly shape per category and a mild upward trend (demand forecaster);
* fraud (~2% of transactions) comes with high ``ip_risk_score``, emulators, short
  sessions, night-time orders and inflated quantities, i.e. a high amount/unit price
  ratio, and a minority of fraud looks clean (fraud detector);
* churners stop ordering at least 35 days before ``now``; low-activity customers
  churn more, so recency, order count and spend all predict the label (churn).

Facts span the 180 days before the UTC midnight starting ``now``'s day and end
three hours before it, with load lags under two hours, so every source is under
27 hours old, fresh for dbt's freshness rules.
"""

from __future__ import annotations

import io
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import psycopg2

from recall_dagster.errors import StackError
from seed.stack.warehouse import Warehouse

DAY = 86_400
HOUR = 3_600
WINDOW_DAYS = 180
CUSTOMER_HISTORY_DAYS = 540
FACTS_END_LAG_S = 3 * HOUR
CALENDAR = datetime(2026, 1, 5, tzinfo=timezone.utc)  # the day every estate is generated on, then moved

# The contract other engineers code against: table -> (column, Postgres type).
RAW_TABLES: dict[str, list[tuple[str, str]]] = {
    "customers": [
        ("customer_id", "int PRIMARY KEY"), ("email", "text"), ("full_name", "text"),
        ("country", "char(2)"), ("segment", "text"), ("signup_at", "timestamptz"),
        ("_loaded_at", "timestamptz"),
    ],
    "products": [
        ("product_id", "int PRIMARY KEY"), ("product_name", "text"), ("category", "text"),
        ("list_price", "numeric(10,2)"), ("_loaded_at", "timestamptz"),
    ],
    "orders": [
        ("order_id", "bigint PRIMARY KEY"), ("customer_id", "int"), ("product_id", "int"),
        ("quantity", "int"), ("unit_price", "numeric(10,2)"), ("status", "text"),
        ("ordered_at", "timestamptz"), ("_loaded_at", "timestamptz"),
    ],
    "transactions": [
        ("transaction_id", "bigint PRIMARY KEY"), ("order_id", "bigint"), ("customer_id", "int"),
        ("amount", "numeric(12,2)"), ("currency", "char(3)"), ("payment_method", "text"),
        ("merchant_category", "text"), ("occurred_at", "timestamptz"), ("_loaded_at", "timestamptz"),
    ],
    "device_signals": [
        ("transaction_id", "bigint"), ("device_id", "text"), ("ip_risk_score", "double precision"),
        ("is_emulator", "boolean"), ("session_seconds", "int"), ("observed_at", "timestamptz"),
        ("_loaded_at", "timestamptz"),
    ],
    "device_signals_v2": [
        ("transaction_id", "bigint"), ("device_id", "text"), ("ip_risk_score", "double precision"),
        ("is_emulator", "boolean"), ("session_seconds", "int"), ("device_trust_score", "double precision"),
        ("observed_at", "timestamptz"), ("_loaded_at", "timestamptz"),
    ],
    "fraud_labels": [("transaction_id", "bigint"), ("is_fraud", "boolean"), ("labeled_at", "timestamptz")],
    "churn_labels": [("customer_id", "int"), ("churned", "boolean"), ("as_of_date", "date")],
}
TIMESTAMP_COLUMNS = {c for cols in RAW_TABLES.values() for c, t in cols if t == "timestamptz"}

CATEGORIES = ("electronics", "home", "apparel", "beauty", "grocery", "sports", "toys", "books")
# Orders per day at scale 1 before churn thinning, and the Monday..Sunday shape of each category.
DAILY_ORDERS = np.array([83, 90, 119, 79, 140, 59, 50, 59], dtype=float)
WEEKLY = np.array([
    [0.85, 0.85, 0.90, 0.95, 1.15, 1.35, 0.95],  # electronics: Friday/Saturday
    [0.80, 0.85, 0.85, 0.90, 1.00, 1.30, 1.30],  # home: weekend projects
    [0.80, 0.80, 0.85, 0.95, 1.10, 1.35, 1.15],  # apparel
    [0.95, 0.95, 1.00, 1.10, 1.20, 0.95, 0.85],  # beauty: before the weekend
    [0.90, 0.85, 0.90, 0.95, 1.15, 1.40, 0.85],  # grocery: Saturday shop
    [1.20, 0.95, 0.95, 0.90, 0.95, 1.10, 0.95],  # sports: Monday resolutions
    [0.80, 0.80, 0.85, 0.90, 1.00, 1.45, 1.20],  # toys
    [0.90, 0.90, 0.95, 0.95, 0.90, 1.05, 1.35],  # books: Sunday reading
])
MEDIAN_PRICE = np.array([120.0, 45.0, 35.0, 20.0, 8.0, 40.0, 25.0, 15.0])
EXTRA_UNITS = np.array([0.2, 0.3, 0.4, 0.5, 1.5, 0.3, 0.4, 0.5])  # mean units beyond the first
RETURN_RATE = np.array([0.05, 0.04, 0.14, 0.03, 0.01, 0.06, 0.04, 0.02])
FRAUD_WEIGHT = np.array([2.5, 1.0, 1.0, 0.8, 0.3, 1.0, 0.8, 0.5])
MERCHANT_CATEGORY = np.array([
    "electronics_store", "home_furnishing", "clothing_store", "cosmetics_store",
    "grocery_store", "sporting_goods", "toy_store", "book_store",
])
PRODUCT_NOUNS = (
    ("Headphones", "Charger", "Speaker", "Monitor", "Keyboard", "Tablet"),
    ("Lamp", "Rug", "Kettle", "Pan Set", "Shelf", "Throw"),
    ("Jacket", "Tee", "Jeans", "Sneakers", "Hoodie", "Dress"),
    ("Serum", "Lipstick", "Cleanser", "Perfume", "Moisturiser", "Palette"),
    ("Coffee", "Olive Oil", "Granola", "Pasta", "Tea", "Chocolate"),
    ("Yoga Mat", "Dumbbells", "Bottle", "Racket", "Helmet", "Backpack"),
    ("Puzzle", "Blocks", "Plush", "Board Game", "Kite", "Robot"),
    ("Novel", "Cookbook", "Atlas", "Biography", "Comic", "Guide"),
)
PRODUCT_ADJECTIVES = np.array(["Classic", "Pro", "Lite", "Eco", "Smart", "Ultra", "Mini", "Max"])
HOURLY = np.array([0.8, 0.5, 0.35, 0.3, 0.35, 0.6, 1.2, 2.2, 3.2, 4.0, 4.6, 5.2,
                   5.8, 5.6, 5.2, 5.0, 5.2, 5.8, 6.4, 6.8, 6.4, 5.2, 3.6, 2.0])
NIGHT_HOURS = 5  # 00:00-04:59 UTC

COUNTRIES = np.array(["US", "GB", "DE", "FR", "NL", "ES", "IT", "CA", "AU", "BR", "IN", "JP"])
COUNTRY_P = np.array([0.34, 0.12, 0.10, 0.08, 0.04, 0.05, 0.05, 0.06, 0.04, 0.05, 0.04, 0.03])
CURRENCY = dict(US="USD", GB="GBP", DE="EUR", FR="EUR", NL="EUR", ES="EUR", IT="EUR",
                CA="CAD", AU="AUD", BR="BRL", IN="INR", JP="JPY")
SEGMENTS = np.array(["consumer", "smb", "enterprise"])
SEGMENT_P = np.array([0.80, 0.15, 0.05])
SEGMENT_ACTIVITY = np.array([1.0, 2.0, 3.5])
PAYMENT_METHODS = np.array(["card", "wallet", "bank_transfer"])
PAYMENT_P = np.array([0.62, 0.28, 0.10])
PAYMENT_FRAUD_WEIGHT = np.array([1.3, 1.0, 0.2])
FIRST_NAMES = np.array([
    "Ava", "Liam", "Mia", "Noah", "Zoe", "Omar", "Lena", "Ravi", "Sofia", "Kenji", "Amara", "Lucas",
    "Ines", "Mateo", "Hana", "Elias", "Priya", "Jonas", "Chloe", "Diego", "Nora", "Felix", "Yara", "Theo",
])
LAST_NAMES = np.array([
    "Smith", "Garcia", "Muller", "Rossi", "Dubois", "Tanaka", "Patel", "Silva", "Jansen", "Kowalski",
    "Nguyen", "Brown", "Lopez", "Schmidt", "Moreau", "Sato", "Khan", "Costa", "Visser", "Novak",
])
EMAIL_DOMAINS = np.array(["example.com", "mail.example", "inbox.example", "corp.example"])


def load_raw(warehouse: Warehouse, now: datetime, seed: int = 7, scale: float = 1.0) -> dict[str, int]:
    """Replace schema ``raw`` with a freshly generated layer; returns row counts per table.

    Idempotent by construction: the schema is dropped (CASCADE, so dbt's staging
    views go with it until the next ``dbt build``) and reloaded in one transaction,
    so readers never see half a raw layer and a heal undoes any injury.
    """
    frames = generate_raw(now, seed=seed, scale=scale)
    conn = warehouse.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute("DROP SCHEMA IF EXISTS raw CASCADE")
            cur.execute("CREATE SCHEMA raw")
            for table, columns in RAW_TABLES.items():
                cur.execute(f"CREATE TABLE raw.{table} ({', '.join(f'{c} {t}' for c, t in columns)})")
                buffer = io.StringIO()
                frames[table].to_csv(buffer, index=False, header=False)
                buffer.seek(0)
                names = ", ".join(c for c, _ in columns)
                cur.copy_expert(f"COPY raw.{table} ({names}) FROM STDIN WITH (FORMAT csv)", buffer)
                cur.execute(f"ANALYZE raw.{table}")
    except psycopg2.Error as err:
        raise StackError(f"could not load the raw layer at {warehouse.where}: {err}".strip()) from err
    finally:
        conn.close()
    return {table: len(frame) for table, frame in frames.items()}


def generate_raw(now: datetime, seed: int = 7, scale: float = 1.0) -> dict[str, pd.DataFrame]:
    """Build every raw table in memory, columns in ``RAW_TABLES`` order; naive ``now`` is UTC."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    now_utc = now.replace(tzinfo=timezone.utc) if now.tzinfo is None else now.astimezone(timezone.utc)
    day = now_utc.replace(hour=0, minute=0, second=0, microsecond=0)
    end_s = int(CALENDAR.timestamp()) - FACTS_END_LAG_S
    rng = np.random.default_rng(seed)

    customers = _customers(rng, max(50, round(20_000 * scale)), end_s)
    products = _products(rng, max(5 * len(CATEGORIES), round(500 * scale)), end_s)
    orders = _orders(rng, customers, products, scale, end_s)
    transactions = _transactions(rng, customers, orders, end_s)
    signals, signals_v2 = _device_signals(rng, customers, transactions)
    fraud_labels = _fraud_labels(rng, transactions, end_s)
    churn_labels = _churn_labels(rng, customers, day)

    frames = {
        "customers": customers, "products": products, "orders": orders, "transactions": transactions,
        "device_signals": signals, "device_signals_v2": signals_v2,
        "fraud_labels": fraud_labels, "churn_labels": churn_labels,
    }
    shift_s = int((day - CALENDAR).total_seconds())
    return {table: _timestamps(frames[table], shift_s)[[c for c, _ in cols]] for table, cols in RAW_TABLES.items()}


def _customers(rng: np.random.Generator, n: int, end_s: int) -> pd.DataFrame:
    """Customers plus latent columns (activity, churn time, payment habit) used downstream."""
    ids = np.arange(1, n + 1)
    signup_s = end_s - (DAY * (CUSTOMER_HISTORY_DAYS * rng.beta(1.3, 1.0, n) + 0.05)).astype(np.int64)
    first, last = rng.choice(FIRST_NAMES, n), rng.choice(LAST_NAMES, n)
    segment = rng.choice(len(SEGMENTS), n, p=SEGMENT_P)
    activity = rng.lognormal(0.0, 0.9, n) * SEGMENT_ACTIVITY[segment]

    window_start = end_s - WINDOW_DAYS * DAY
    churn_p = 1.0 / (1.0 + np.exp(1.0 + 0.9 * np.log(activity)))
    churn_at = rng.uniform(window_start + 20 * DAY, end_s - 35 * DAY, n)
    churner = (rng.random(n) < churn_p) & (churn_at > signup_s + 7 * DAY)

    return pd.DataFrame({
        "customer_id": ids,
        "email": pd.Series(first).str.lower() + "." + pd.Series(last).str.lower() + ids.astype(str) + "@"
        + rng.choice(EMAIL_DOMAINS, n),
        "full_name": pd.Series(first) + " " + pd.Series(last),
        "country": rng.choice(COUNTRIES, n, p=COUNTRY_P),
        "segment": SEGMENTS[segment],
        "signup_at": signup_s,
        "_loaded_at": signup_s + rng.integers(5 * 60, 90 * 60, n),
        "activity": activity,
        "churner": churner,
        "churn_at": np.where(churner, churn_at, np.inf),
        "payment_idx": rng.choice(len(PAYMENT_METHODS), n, p=PAYMENT_P),
        "device_base": rng.integers(0, 2**36, n) << 4,
        "devices": rng.integers(1, 4, n),
    })


def _products(rng: np.random.Generator, n: int, end_s: int) -> pd.DataFrame:
    ids = np.arange(1, n + 1)
    category = rng.permutation(np.arange(n) % len(CATEGORIES))
    nouns = np.array([rng.choice(PRODUCT_NOUNS[c]) for c in category])
    price = np.maximum(1.0, MEDIAN_PRICE[category] * rng.lognormal(0.0, 0.45, n)).round(2)
    return pd.DataFrame({
        "product_id": ids,
        "product_name": pd.Series(rng.choice(PRODUCT_ADJECTIVES, n)) + " " + nouns + " " + ids.astype(str),
        "category": np.array(CATEGORIES)[category],
        "list_price": price,
        "_loaded_at": end_s + rng.integers(HOUR, 2 * HOUR, n),  # the nightly catalogue snapshot
        "category_idx": category,
        "popularity": rng.lognormal(0.0, 1.0, n),
    })


def _orders(rng: np.random.Generator, customers: pd.DataFrame, products: pd.DataFrame,
            scale: float, end_s: int) -> pd.DataFrame:
    """Poisson demand per (day, category) with weekly shape and trend, then who bought what."""
    start_s = end_s - WINDOW_DAYS * DAY
    first_day = start_s // DAY
    days = np.arange(first_day, end_s // DAY + 1)
    dow = (days + 3) % 7  # 1970-01-01 was a Thursday; 0 = Monday
    trend = 1.0 + 0.15 * (days - first_day) / WINDOW_DAYS
    lam = scale * DAILY_ORDERS[None, :] * WEEKLY[:, dow].T * trend[:, None]
    counts = rng.poisson(lam * rng.lognormal(0.0, 0.08, lam.shape))
    day_idx, cat = np.nonzero(counts)
    reps = counts[day_idx, cat]
    day_s = np.repeat(days[day_idx] * DAY, reps)
    category = np.repeat(cat, reps)
    ordered_s = day_s + rng.choice(24, len(day_s), p=HOURLY / HOURLY.sum()) * HOUR + rng.integers(0, HOUR, len(day_s))
    keep = (ordered_s >= start_s) & (ordered_s <= end_s)
    ordered_s, category = ordered_s[keep], category[keep]
    m = len(ordered_s)

    product = np.empty(m, dtype=np.int64)
    for c in range(len(CATEGORIES)):
        in_cat, candidates = category == c, products[products.category_idx == c]
        weights = candidates.popularity.to_numpy()
        product[in_cat] = rng.choice(candidates.product_id.to_numpy(), in_cat.sum(), p=weights / weights.sum())

    customer_idx, eligible = _buyers(rng, customers, ordered_s)
    alive = eligible & (ordered_s < customers.churn_at.to_numpy()[customer_idx])
    ordered_s, category, product, customer_idx = (a[alive] for a in (ordered_s, category, product, customer_idx))
    m = len(ordered_s)

    weights = FRAUD_WEIGHT[category] * PAYMENT_FRAUD_WEIGHT[customers.payment_idx.to_numpy()[customer_idx]]
    fraud = rng.random(m) < 0.021 * weights / weights.mean()
    at_night = fraud & (rng.random(m) < 0.6)
    night_s = ordered_s - ordered_s % DAY + rng.integers(0, NIGHT_HOURS * HOUR, m)
    earliest = np.maximum(customers.signup_at.to_numpy()[customer_idx], start_s)
    ordered_s = np.where(at_night & (night_s >= earliest), night_s, ordered_s)

    quantity = 1 + rng.poisson(EXTRA_UNITS[category]) + np.where(fraud, 1 + rng.poisson(3.0, m), 0)
    list_price = products.list_price.to_numpy()[product - 1]
    discounted = rng.random(m) < 0.4
    unit_price = np.where(discounted, list_price * rng.uniform(0.75, 0.95, m), list_price).round(2)

    age = end_s - ordered_s
    returned = (age > 4 * DAY) & ~fraud & (rng.random(m) < RETURN_RATE[category])
    status = np.select(
        [age < DAY, (age < 4 * DAY) & (rng.random(m) < 0.25), age < 4 * DAY, returned],
        ["placed", "placed", "shipped", "returned"], default="delivered",
    )

    order = np.argsort(ordered_s, kind="stable")
    frame = pd.DataFrame({
        "customer_id": customers.customer_id.to_numpy()[customer_idx],
        "product_id": product,
        "quantity": quantity,
        "unit_price": unit_price,
        "status": status,
        "ordered_at": ordered_s,
        "_loaded_at": ordered_s + rng.integers(5 * 60, 90 * 60, m),
        "category_idx": category,
        "customer_idx": customer_idx,
        "fraud": fraud,
    }).iloc[order].reset_index(drop=True)
    frame.insert(0, "order_id", np.arange(1_000_001, 1_000_001 + m, dtype=np.int64))
    return frame


def _buyers(rng: np.random.Generator, customers: pd.DataFrame, ordered_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pick a buyer per order, weighted by activity among customers who had signed up by then.

    Sorting customers by signup turns "signed up before t" into a prefix, so one
    cumulative-weight search places every order at once instead of a Python loop.
    """
    by_signup = np.argsort(customers.signup_at.to_numpy(), kind="stable")
    signup_sorted = customers.signup_at.to_numpy()[by_signup]
    cumulative = np.cumsum(customers.activity.to_numpy()[by_signup])
    eligible_n = np.searchsorted(signup_sorted, ordered_s, side="right")
    eligible = eligible_n > 0
    limit = np.maximum(eligible_n, 1) - 1
    position = np.searchsorted(cumulative, rng.random(len(ordered_s)) * cumulative[limit], side="right")
    return by_signup[np.minimum(position, limit)], eligible


def _transactions(rng: np.random.Generator, customers: pd.DataFrame, orders: pd.DataFrame, end_s: int) -> pd.DataFrame:
    """One charge per order; a second charge for split shipments, or a refund for returns."""
    m = len(orders)
    ordered_s = orders.ordered_at.to_numpy()
    total = (orders.quantity.to_numpy() * orders.unit_price.to_numpy()).round(2)
    returned = orders.status.to_numpy() == "returned"
    split = ~returned & (rng.random(m) < 0.72)
    first_amount = np.where(split, (total * rng.uniform(0.35, 0.65, m)).round(2), total)

    second = split | returned
    later_s = np.minimum(ordered_s + rng.integers(HOUR, 3 * DAY, m), end_s)
    refund_s = ordered_s + (rng.uniform(0.3, 0.9, m) * (end_s - ordered_s)).astype(np.int64)
    frame = pd.DataFrame({
        "order_idx": np.concatenate([np.arange(m), np.flatnonzero(second)]),
        "amount": np.concatenate([first_amount, np.where(returned, -total, total - first_amount)[second]]).round(2),
        "occurred_at": np.concatenate([
            ordered_s + rng.integers(5, 120, m),
            np.maximum(np.where(returned, refund_s, later_s), ordered_s + 60)[second],
        ]),
        "refund": np.concatenate([np.zeros(m, dtype=bool), returned[second]]),
    }).sort_values(["occurred_at", "order_idx"], kind="stable").reset_index(drop=True)

    idx = frame.order_idx.to_numpy()
    customer_idx = orders.customer_idx.to_numpy()[idx]
    n = len(frame)
    frame.insert(0, "transaction_id", np.arange(5_000_001, 5_000_001 + n, dtype=np.int64))
    frame["order_id"] = orders.order_id.to_numpy()[idx]
    frame["customer_id"] = orders.customer_id.to_numpy()[idx]
    frame["customer_idx"] = customer_idx
    frame["currency"] = pd.Series(customers.country.to_numpy()[customer_idx]).map(CURRENCY).to_numpy()
    frame["payment_method"] = PAYMENT_METHODS[customers.payment_idx.to_numpy()[customer_idx]]
    frame["merchant_category"] = MERCHANT_CATEGORY[orders.category_idx.to_numpy()[idx]]
    frame["_loaded_at"] = frame.occurred_at + rng.integers(2 * 60, 60 * 60, n)
    frame["fraud"] = orders.fraud.to_numpy()[idx] & ~frame.refund.to_numpy()
    return frame


def _device_signals(rng: np.random.Generator, customers: pd.DataFrame,
                    transactions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two vendors observing the same customer-initiated charges (refunds have no device).

    v2 recalibrates the IP risk score slightly and adds a device trust score, so a
    model trained on v1 and served from v2 sees a real, if small, skew.
    """
    charges = transactions[~transactions.refund].reset_index(drop=True)
    n = len(charges)
    fraud = charges.fraud.to_numpy()
    hidden = fraud & (rng.random(n) < 0.3)  # fraud that looks like an ordinary customer
    loud = fraud & ~hidden
    owner = charges.customer_idx.to_numpy()
    own_device = customers.device_base.to_numpy()[owner] + rng.integers(0, customers.devices.to_numpy()[owner])
    device = np.where(loud, rng.integers(2**40, 2**41, n), own_device)
    device_id = pd.Series(device).map("dv_{:011x}".format).to_numpy()
    ip_risk = np.where(loud, rng.beta(5.0, 2.5, n), rng.beta(1.2, 10.0, n))
    emulator = np.where(loud, rng.random(n) < 0.35, rng.random(n) < 0.008)
    session = np.where(loud, rng.lognormal(np.log(70), 0.7, n), rng.lognormal(np.log(240), 0.6, n)).astype(np.int64) + 5
    occurred_s = charges.occurred_at.to_numpy()

    v1 = pd.DataFrame({
        "transaction_id": charges.transaction_id,
        "device_id": device_id,
        "ip_risk_score": ip_risk.round(4),
        "is_emulator": emulator,
        "session_seconds": session,
        "observed_at": occurred_s - session,
        "_loaded_at": occurred_s + rng.integers(2 * 60, 60 * 60, n),
    })
    v2 = v1.assign(
        ip_risk_score=np.clip(ip_risk * 0.92 + rng.normal(0.02, 0.03, n), 0.0, 1.0).round(4),
        device_trust_score=np.where(loud, rng.beta(2.0, 5.0, n), rng.beta(8.0, 2.0, n)).round(4),
        _loaded_at=occurred_s + rng.integers(60, 30 * 60, n),
    )
    return v1, v2


def _fraud_labels(rng: np.random.Generator, transactions: pd.DataFrame, end_s: int) -> pd.DataFrame:
    """Labels arrive late (chargebacks take weeks), so the newest charges are still unlabelled."""
    charges = transactions[~transactions.refund]
    fraud = charges.fraud.to_numpy()
    delay = np.where(fraud, rng.integers(DAY, 21 * DAY, len(charges)), rng.integers(DAY, 3 * DAY, len(charges)))
    labeled_s = charges.occurred_at.to_numpy() + delay
    known = labeled_s <= end_s
    return pd.DataFrame({
        "transaction_id": charges.transaction_id.to_numpy()[known],
        "is_fraud": fraud[known],
        "labeled_at": labeled_s[known],
    })


def _churn_labels(rng: np.random.Generator, customers: pd.DataFrame, day: datetime) -> pd.DataFrame:
    """Today's churn flag from the latent churners, with 3% label noise as in any CRM."""
    flip = rng.random(len(customers)) < 0.03
    return pd.DataFrame({
        "customer_id": customers.customer_id,
        "churned": customers.churner.to_numpy() ^ flip,
        "as_of_date": day.date().isoformat(),
    })



def _timestamps(frame: pd.DataFrame, shift_s: int) -> pd.DataFrame:
    """Epoch seconds moved by ``shift_s`` -> ISO-8601 UTC text, once at the end so the maths stays in integers.

    numpy formats a column in one C call; letting pandas format datetimes in
    ``to_csv`` costs several seconds per 200k rows.
    """
    cols = {
        c: np.datetime_as_string((frame[c].to_numpy() + shift_s).astype("datetime64[s]"), timezone="UTC")
        for c in frame.columns if c in TIMESTAMP_COLUMNS
    }
    return frame.assign(**cols)
