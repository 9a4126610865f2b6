/** Words the simulator writes with: Chinese for the Chinese platforms, English for x, reddit and youtube. */

export const ZH_NAMES = ["山野小鹿", "阿杰的厨房", "程序员小北", "一只橘猫酱", "旅行的阿May", "数码老王", "林间晚风", "豆豆妈妈", "健身的小李", "城市观察员", "今天也要早睡", "咖啡续命中", "理财小白兔", "北京大妞儿", "深夜读书会", "小镇做题家"];
export const ZH_BIOS = ["记录生活里的小确幸", "分享真实测评，不接硬广", "十年老饭骨，只做家常菜", "在大厂写代码，下班写字", "一个人一只猫，走遍中国", "科普 | 数码 | 好物", "坚持每天更新", "合作请私信"];
export const ZH_TEMPLATES = [
  "{q}｜新手必看的避坑指南",
  "真实测评：{q}到底值不值得？",
  "第一次接触{q}，我总结了这些经验",
  "{q}全攻略，建议收藏",
  "关于{q}，说点大实话",
  "花了三个月研究{q}，结论出乎意料",
  "{q}的10个冷知识",
  "普通人如何入门{q}",
];
export const ZH_TEXT = ["整理了一份清单，希望对大家有帮助。", "纯个人体验，不喜勿喷～", "评论区聊聊你们的看法！", "先说结论：看需求，别跟风。", "这次真的踩了不少坑，记录一下。", "图片都是自己拍的，转载请注明。"];
export const ZH_COMMENTS = ["太有用了，已收藏", "求链接！", "同款踩坑，哈哈哈", "说得太对了", "up主辛苦了", "第一次看到这么详细的", "蹲一个后续", "这个价格可以接受", "已三连", "楼主是哪个城市的？", "学到了学到了", "感觉有点夸张了"];
export const ZH_TRENDS = ["双十一战报出炉", "冬季流感高发期", "新能源车降价潮", "考研报名人数创新高", "年终奖发放时间", "初雪", "国产大模型发布", "演唱会抢票攻略", "航天员出舱", "周末去哪儿", "奶茶新品测评", "春运火车票开售", "世界杯预选赛", "猫咪行为学", "城市漫步路线", "减脂餐怎么吃", "电影票房破纪录", "手机新品发布会", "AI写作工具", "露营装备清单"];

export const EN_NAMES = ["Maya Chen", "dev_oliver", "TechWithTom", "sarahcodes", "The Frugal Cook", "nate.builds", "Priya R.", "OpenSourceOwl", "jules_on_film", "Marcus Lee", "HomeBaristaHQ", "quietgeek", "Linh Tran", "runwithrachel"];
export const EN_BIOS = ["Writing about software and the people who make it.", "Coffee, code and long walks.", "Reviews without sponsors.", "Building in public.", "Weekly videos on tools I actually use.", "Opinions are my own."];
export const EN_TEMPLATES = [
  "{q}: what I wish I knew before starting",
  "I tried {q} for 30 days. Here is what happened",
  "The honest guide to {q}",
  "Is {q} worth it in 2026?",
  "{q} explained in 10 minutes",
  "Hot take: {q} is overrated",
  "A beginner's checklist for {q}",
  "Why everyone is talking about {q}",
];
export const EN_TEXT = ["Long thread, but worth it.", "Sharing my notes in case they help someone.", "Curious what others think.", "Benchmarks and sources in the replies.", "Not sponsored, just impressed.", "Edit: thanks for all the replies!"];
export const EN_COMMENTS = ["This is exactly what I needed, thanks!", "Great write-up.", "Source?", "Strongly disagree with point 3.", "Saving this for later.", "Same experience here.", "Underrated post.", "Can you do a follow-up?", "This aged well.", "Came here to say this."];
export const EN_TRENDS = ["TypeScript 7", "Champions League", "Black Friday deals", "Northern lights", "Open-source AI models", "World Series", "Thanksgiving recipes", "SpaceX launch", "New MacBook", "Election results", "Remote work", "Climate summit", "Taylor Swift tour", "Marathon season", "Rust 2026"];
