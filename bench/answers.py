"""Chatbot-like answers for the token benchmark (bench/tokens.py): 3–8 sentences, 360–720
characters, with greetings, opinions, advice and lists, the way assistants write."""

ANSWERS = [
    "Great question! The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in "
    "1889 for the World's Fair and was designed by the company of Gustave Eiffel. At 330 metres, it was the "
    "tallest structure built by people for 41 years. Personally, I think it is the most beautiful landmark in "
    "Europe. I hope this helps!",
    "Sure! Here is a short overview of metformin.\n\n"
    "Metformin is the first-line drug for type 2 diabetes. It lowers blood sugar by reducing glucose "
    "production in the liver; it also improves insulin sensitivity.\n\n"
    "Key facts:\n"
    "1. Metformin was approved in the United States in 1994.\n"
    "2. Metformin is on the World Health Organization list of essential medicines.\n"
    "3. Common side effects of metformin include nausea and diarrhoea.\n\n"
    "Always talk to your doctor before changing your medication.",
    "Marie Curie was a physicist and chemist born in Warsaw who worked in France. She was the first woman to "
    "win a Nobel Prize, in physics in 1903. In 1911 Marie Curie won a second Nobel Prize, in chemistry, for "
    "the discovery of polonium and radium. She remains the only person to win Nobel Prizes in two different "
    "sciences. Her story is truly inspiring, and it shows how much one person can change science.",
    "Hello! The Great Wall of China is a series of fortifications built over many centuries. Most of the "
    "existing wall was built during the Ming dynasty. Its total length, including all its branches, is about "
    "21,196 kilometres. Contrary to a popular myth, the Great Wall of China is not visible from the Moon with "
    "the naked eye. It was named a UNESCO World Heritage Site in 1987. Let me know if you want more details!",
    "Python is a high-level programming language created by Guido van Rossum. It was first released in 1991.\n\n"
    "Some reasons people like Python:\n"
    "- The syntax of Python is simple and readable.\n"
    "- Python has a large standard library.\n"
    "- Python is widely used in data science and machine learning.\n\n"
    "In my opinion, it is the best language for beginners, and it is fun to learn.",
]
