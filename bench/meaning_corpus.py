# ruff: noqa: E501
"""The written evaluation set of bench_meaning.py: 60 papers in 10 topics (titles and short abstracts
written for this bench, not taken from any library), and queries that paraphrase one paper each with
other words than its own: 20 in English, 6 in Chinese."""

from __future__ import annotations

# topic → [(key, title, abstract)]
PAPERS: dict[str, list[tuple[str, str, str]]] = {
    "gpu-compilers": [
        (
            "GPUCZZZY",
            "Operator fusion for deep learning compilers",
            "Adjacent operators of a neural network graph are merged into one GPU kernel so that intermediate "
            "tensors stay in registers and shared memory, which cuts traffic to device memory.",
        ),
        (
            "GPUCZZZ2",
            "Automatic scheduling of tensor programs with learned cost models",
            "A search over loop tilings, vectorisation and thread bindings guided by a gradient-boosted cost "
            "model finds fast implementations of convolution and matrix multiplication on CPUs and GPUs.",
        ),
        (
            "GPUCZZZ3",
            "Software pipelining for tensor core matrix multiplication",
            "We overlap asynchronous copies from global memory with tensor core math by staging tiles in "
            "shared memory across several pipeline stages, reaching near-peak throughput on new GPUs.",
        ),
        (
            "GPUCZZZ4",
            "A tile-based language for writing fast GPU kernels",
            "Programmers describe computation on tiles of data and the compiler chooses memory layouts, "
            "thread mappings and synchronisation, producing attention kernels as fast as hand-written CUDA.",
        ),
        (
            "GPUCZZZ5",
            "Persistent megakernels for low-latency language model inference",
            "The whole decoding step of a large language model runs inside one persistent kernel whose "
            "in-kernel scheduler dispatches tasks to streaming multiprocessors, removing launch overheads.",
        ),
        (
            "GPUCZZZ6",
            "Memory planning for large language model training",
            "Activation recomputation and offloading to host memory let models with billions of parameters train on GPUs with little device memory.",
        ),
    ],
    "bird-ecology": [
        (
            "BIRDZZZY",
            "Migration routes of songbirds between Europe and Africa",
            "Light-level geolocators on warblers reveal their crossing of the Sahara and the Mediterranean "
            "and the stopover sites where they refuel.",
        ),
        (
            "BIRDZZZ2",
            "Nest predation and clutch size in forest passerines",
            "Across fifty woodland species, higher rates of egg loss to predators go with smaller clutches "
            "and shorter incubation.",
        ),
        (
            "BIRDZZZ3",
            "Song learning in juvenile zebra finches",
            "Young males memorise a tutor's song and refine their own vocalisations by auditory feedback "
            "during a sensitive period.",
        ),
        (
            "BIRDZZZ4",
            "Seabird foraging trips tracked by GPS",
            "Albatrosses and petrels travel thousands of kilometres over the open ocean to feed, following "
            "winds and fronts where prey gathers.",
        ),
        (
            "BIRDZZZ5",
            "Urban noise shifts the pitch of bird song",
            "Great tits in cities sing at higher frequencies than forest birds, so that their songs are "
            "heard above the low rumble of traffic.",
        ),
        (
            "BIRDZZZ6",
            "Plumage colour and mate choice in birds of paradise",
            "Females choose males by their iridescent feathers and elaborate courtship displays in the rainforest.",
        ),
    ],
    "monetary-economics": [
        (
            "ECQNZZZY",
            "Interest rates and inflation expectations",
            "Central bank announcements move households' expectations of future price rises and the yield "
            "curve of government bonds.",
        ),
        (
            "ECQNZZZ2",
            "Quantitative easing and long-term bond yields",
            "Large purchases of government securities by the central bank lowered long-term yields through "
            "portfolio rebalancing and signalling.",
        ),
        (
            "ECQNZZZ3",
            "Exchange rate pass-through to import prices",
            "A depreciation of the currency raises the prices of imported goods only partly and slowly, "
            "depending on invoicing currency and market power.",
        ),
        (
            "ECQNZZZ4",
            "The zero lower bound and forward guidance",
            "When policy rates cannot fall further, promises about the future path of rates can still "
            "stimulate spending and investment.",
        ),
        (
            "ECQNZZZ5",
            "Wage rigidity and unemployment in recessions",
            "Because nominal wages rarely fall, firms respond to weak demand by cutting jobs, and "
            "unemployment rises sharply in downturns.",
        ),
        (
            "ECQNZZZ6",
            "Central bank independence and price stability",
            "Countries whose monetary authority is shielded from politicians have had lower and steadier inflation.",
        ),
    ],
    "protein-biology": [
        (
            "PRTNZZZY",
            "Predicting protein structure from amino acid sequence",
            "A deep network reads multiple sequence alignments and predicts the three-dimensional fold of a "
            "protein with near-experimental accuracy.",
        ),
        (
            "PRTNZZZ2",
            "Chaperones that help proteins fold in the cell",
            "Heat shock proteins bind unfolded chains, prevent aggregation and give them repeated chances "
            "to reach their native state.",
        ),
        (
            "PRTNZZZ3",
            "Cryo-electron microscopy of membrane transporters",
            "Frozen samples imaged with an electron microscope reveal the conformations a transporter "
            "passes through as it moves sugars across the membrane.",
        ),
        (
            "PRTNZZZ4",
            "Designing enzymes from scratch",
            "Computational design of new protein sequences produces enzymes that catalyse reactions no "
            "natural protein performs.",
        ),
        (
            "PRTNZZZ5",
            "Intrinsically disordered regions in signalling proteins",
            "Many regulatory proteins contain segments without a fixed structure that bind several "
            "partners and form liquid condensates.",
        ),
        (
            "PRTNZZZ6",
            "Protein degradation by the ubiquitin proteasome system",
            "Cells tag damaged or unneeded proteins with ubiquitin chains and destroy them in the proteasome.",
        ),
    ],
    "romantic-poetry": [
        (
            "PQETZZZY",
            "Metre and rhyme in the odes of Keats",
            "A reading of stanza forms, rhythm and imagery of nature in the great odes of 1819.",
        ),
        (
            "PQETZZZ2",
            "Wordsworth and the poetry of memory",
            "The Prelude turns childhood recollection into the growth of a poet's mind.",
        ),
        (
            "PQETZZZ3",
            "Shelley's political verse",
            "Poems written after the Peterloo massacre call for nonviolent resistance to tyranny.",
        ),
        (
            "PQETZZZ4",
            "Byron's satire and the comic epic",
            "Don Juan mixes digression, irony and ottava rima to mock the manners of its age.",
        ),
        (
            "PQETZZZ5",
            "Women poets of the Romantic period",
            "Charlotte Smith and Felicia Hemans wrote sonnets and lyrics that sold widely and shaped the "
            "sentimental tradition.",
        ),
        (
            "PQETZZZ6",
            "Coleridge's supernatural ballads",
            "The Rime of the Ancient Mariner uses archaic diction and dream imagery to tell of guilt and penance at sea.",
        ),
    ],
    "climate-ocean": [
        (
            "CLIMZZZY",
            "Ocean heat uptake and sea level rise",
            "Most of the excess energy trapped by greenhouse gases warms the ocean, which expands and "
            "raises the sea level.",
        ),
        (
            "CLIMZZZ2",
            "Melting of the West Antarctic ice sheet",
            "Warm water reaching beneath floating ice shelves thins them and speeds the flow of glaciers "
            "into the sea.",
        ),
        (
            "CLIMZZZ3",
            "El Niño and global rainfall patterns",
            "Warming of the eastern tropical Pacific shifts storms and droughts across continents.",
        ),
        (
            "CLIMZZZ4",
            "Coral bleaching during marine heatwaves",
            "Reefs lose their symbiotic algae when water temperatures stay high for weeks, and many corals "
            "die.",
        ),
        (
            "CLIMZZZ5",
            "Carbon dioxide absorption and ocean acidification",
            "The sea takes up a quarter of emitted carbon dioxide, lowering its pH and harming shell-forming "
            "organisms.",
        ),
        (
            "CLIMZZZ6",
            "Slowdown of the Atlantic overturning circulation",
            "Fresh meltwater weakens the current that carries warm surface water north, with effects on European climate.",
        ),
    ],
    "cryptography": [
        (
            "CRYPZZZY",
            "Lattice-based public key encryption",
            "Encryption whose security rests on the hardness of finding short vectors in lattices resists "
            "attacks by quantum computers.",
        ),
        (
            "CRYPZZZ2",
            "Side-channel attacks on AES implementations",
            "Measuring the power draw or timing of a device recovers the secret key of the block cipher.",
        ),
        (
            "CRYPZZZ3",
            "Zero-knowledge proofs for verifiable computation",
            "A prover convinces a verifier that a computation was done correctly without revealing its "
            "inputs, with short proofs checked in milliseconds.",
        ),
        (
            "CRYPZZZ4",
            "Password hashing with memory-hard functions",
            "Functions that need much memory to evaluate make brute-force guessing of stolen password "
            "hashes on GPUs and ASICs expensive.",
        ),
        (
            "CRYPZZZ5",
            "Formal verification of the TLS handshake",
            "A machine-checked model of the protocol proves that the session keys stay secret and the "
            "peers authenticated.",
        ),
        (
            "CRYPZZZ6",
            "Elliptic curve signatures in practice",
            "Nonce reuse and weak random number generators have leaked private signing keys of deployed systems.",
        ),
    ],
    "databases": [
        (
            "DBMSZZZY",
            "Join ordering with learned cardinality estimates",
            "A neural model estimates the sizes of intermediate results so the query optimiser picks "
            "better join orders.",
        ),
        (
            "DBMSZZZ2",
            "Column stores for analytical queries",
            "Storing each attribute separately with compression and vectorised execution speeds up scans "
            "and aggregations.",
        ),
        (
            "DBMSZZZ3",
            "Multi-version concurrency control in main-memory databases",
            "Transactions read consistent snapshots while writers create new versions, avoiding locks on "
            "reads.",
        ),
        (
            "DBMSZZZ4",
            "Log-structured merge trees for write-heavy storage",
            "Writes are buffered in memory and merged into sorted runs on disk, trading read cost for "
            "fast ingestion.",
        ),
        (
            "DBMSZZZ5",
            "Distributed transactions with deterministic ordering",
            "Replicas agree on the order of transactions before executing them, avoiding two-phase commit.",
        ),
        (
            "DBMSZZZ6",
            "Indexing with learned models instead of B-trees",
            "A model of the key distribution predicts where a record lies in a sorted array, replacing tree lookups.",
        ),
    ],
    "robotics": [
        (
            "RQBQZZZY",
            "Learning to grasp unknown objects from depth images",
            "A convolutional network trained on thousands of trials predicts where a robot hand should close "
            "on an unseen object.",
        ),
        (
            "RQBQZZZ2",
            "Legged locomotion over rough terrain with reinforcement learning",
            "A quadruped policy trained in simulation walks over rocks, stairs and snow in the real world.",
        ),
        (
            "RQBQZZZ3",
            "Simultaneous localisation and mapping with cameras",
            "A moving camera builds a map of its surroundings while estimating its own position from visual "
            "features.",
        ),
        (
            "RQBQZZZ4",
            "Safe human-robot collaboration on assembly lines",
            "Force sensing and speed limits let an arm work next to people without injuring them.",
        ),
        (
            "RQBQZZZ5",
            "Motion planning for manipulators in cluttered scenes",
            "Sampling-based planners find collision-free paths for a robot arm among many obstacles.",
        ),
        (
            "RQBQZZZ6",
            "Imitation learning from human demonstrations",
            "A robot watches people perform household tasks and learns a policy that reproduces them.",
        ),
    ],
    "epidemiology": [
        (
            "EPIDZZZY",
            "Vaccine effectiveness against severe influenza",
            "A test-negative study of hospitalised patients estimates how much the seasonal vaccine reduces "
            "severe illness.",
        ),
        (
            "EPIDZZZ2",
            "Contact tracing to contain outbreaks",
            "Finding and quarantining the contacts of infected people lowers the reproduction number of an "
            "epidemic.",
        ),
        (
            "EPIDZZZ3",
            "Malaria transmission and bed nets",
            "Insecticide-treated nets cut child deaths in regions where mosquitoes spread the parasite.",
        ),
        (
            "EPIDZZZ4",
            "Antibiotic resistance in hospital infections",
            "Overuse of broad-spectrum drugs selects bacteria that no common treatment can kill.",
        ),
        (
            "EPIDZZZ5",
            "Air pollution and childhood asthma",
            "Children living near busy roads breathe more fine particles and develop asthma more often.",
        ),
        (
            "EPIDZZZ6",
            "Measles outbreaks after falling vaccination coverage",
            "Where fewer children receive two doses, herd immunity is lost and the virus returns.",
        ),
    ],
}

# A query that says what one paper is about in other words (its key first).
QUERIES: list[tuple[str, str]] = [
    ("GPUCZZZY", "combining kernels to avoid writing intermediate results back to DRAM"),
    ("GPUCZZZ5", "running an entire LLM decode step in a single long-lived GPU program"),
    ("BIRDZZZY", "how warblers cross the desert on their way south"),
    ("BIRDZZZ5", "city traffic makes birds sing higher"),
    ("ECQNZZZ2", "central bank buying government debt to push down long rates"),
    ("ECQNZZZ5", "why pay does not drop and layoffs rise in a slump"),
    ("PRTNZZZY", "AI that works out the 3D shape of a molecule from its letters"),
    ("PRTNZZZ3", "freezing samples to image transport proteins with electrons"),
    ("PQETZZZ2", "a long autobiographical poem about growing up and the imagination"),
    ("PQETZZZ4", "comic mock-epic that ridicules society in eight-line stanzas"),
    ("CLIMZZZ2", "glaciers in the far south flowing faster as warm seawater eats floating ice"),
    ("CLIMZZZ4", "reefs turning white when the sea stays too hot"),
    ("CRYPZZZY", "cryptosystems that survive quantum attacks"),
    ("CRYPZZZ2", "extracting block cipher keys from power consumption"),
    ("DBMSZZZY", "machine learning guesses result sizes so the planner combines tables in a better sequence"),
    ("DBMSZZZ4", "buffer writes in RAM and compact sorted files later"),
    ("RQBQZZZ2", "four-legged machine taught in a simulator to walk on stones and snow"),
    ("RQBQZZZ3", "a camera figures out where it is while drawing a map"),
    ("EPIDZZZ3", "insecticide nets stop mosquitoes killing children"),
    ("EPIDZZZ5", "kids near highways get breathing disease from dirty air"),
    # Chinese
    ("GPUCZZZY", "算子融合减少显存访问"),
    ("BIRDZZZY", "候鸟迁徙路线"),
    ("ECQNZZZY", "利率与通货膨胀预期"),
    ("PRTNZZZY", "蛋白质结构预测"),
    ("CLIMZZZY", "海洋变暖与海平面上升"),
    ("CRYPZZZ3", "零知识证明"),
]
