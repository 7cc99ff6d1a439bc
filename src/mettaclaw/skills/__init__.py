"""Python sides of the built-in skills; each is declared (with help text) in metta/skills.metta."""


class SkillError(Exception):
    """A skill could not do what the model asked; the message is the cause the model will read."""
